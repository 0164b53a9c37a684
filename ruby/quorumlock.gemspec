# frozen_string_literal: true

require_relative "lib/quorumlock/version"

Gem::Specification.new do |s|
  s.name = "quorumlock"
  s.version = Quorumlock::VERSION
  s.summary = "Redlock distributed locks over N independent Redis masters (libquorumlock through ruby-ffi)"
  s.description = "Ruby binding of quorumlock's Redlock engine through its C ABI: a native client " \
                  "(locks, extension, fencing tokens, lost-lock notification) and a redlock-rb 2.x " \
                  "drop-in (require \"quorumlock/redlock\"). Needs libquorumlock installed (make install)."
  s.authors = ["quorumlock contributors"]
  s.licenses = ["MIT", "Apache-2.0"]
  s.files = Dir["lib/**/*.rb"] + ["README.md"]
  s.require_paths = ["lib"]
  s.required_ruby_version = ">= 3.0"
  s.add_runtime_dependency "ffi", ">= 1.15"
  s.metadata["rubygems_mfa_required"] = "true"
end
