# frozen_string_literal: true

# quorumlock: Redlock distributed locks over N independent Redis masters, through the C ABI
# of libquorumlock (one engine for every language). See Quorumlock::Client, and
# Quorumlock::Redlock::Client (require "quorumlock/redlock") for redlock-rb's API.
require_relative "quorumlock/version"
require_relative "quorumlock/native"
require_relative "quorumlock/errors"
require_relative "quorumlock/convert"
require_relative "quorumlock/lock"
require_relative "quorumlock/client"

module Quorumlock
  # The version of the loaded libquorumlock ("0.2.0").
  def self.library_version
    Native.quorumlock_version
  end

  # The path libquorumlock was loaded from.
  def self.library_path
    Native::LIBRARY_PATH
  end

  # The Lua fence check for a resource kept in Redis: `EVAL script 1 <fence key> <token>`
  # returns 1 and stores the token when it is at least the highest seen, 0 for a stale holder.
  def self.fence_check_script
    Native.quorumlock_fence_check_script
  end

  lib_major = library_version.split(".").first
  if lib_major != VERSION.split(".").first
    raise LibraryNotFound, "libquorumlock #{library_version} at #{library_path} does not match the " \
                           "quorumlock gem #{VERSION} (major versions differ)"
  end
end
