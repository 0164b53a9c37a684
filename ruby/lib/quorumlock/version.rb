# frozen_string_literal: true

module Quorumlock
  # The gem's version; Quorumlock.library_version is the loaded libquorumlock's.
  VERSION = "0.2.0"
end
