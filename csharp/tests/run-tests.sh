#!/bin/sh
# Runs the NUnit suite and prints the plain closing line "N passed, N failed" (nunit-console 2.6
# prints its own summary in a form CI does not read). Usage: run-tests.sh <build dir>
set -u
build=$1
nunit-console -nologo -noshadow "-xml=$build/TestResult.xml" "$build/Quorumlock.Tests.dll"
rc=$?
if [ -f "$build/TestResult.xml" ]; then
  sed -n 's/.*<test-results [^>]*total="\([0-9]*\)"[^>]*errors="\([0-9]*\)"[^>]*failures="\([0-9]*\)"[^>]*not-run="\([0-9]*\)".*/\1 \2 \3 \4/p' "$build/TestResult.xml" |
    { read -r total errors failures notrun && echo "csharp: $((total - errors - failures - notrun)) passed, $((errors + failures)) failed, $notrun skipped"; }
fi
exit $rc
