# frozen_string_literal: true

module Quorumlock
  # What happened on one node in the call that failed.
  #   index:   position in the node list given to Client.new
  #   address: "host:port/db" (never credentials)
  #   kind:    the C node kind name ("HeldByOther", "Timeout", "ConnectionRefused", ...)
  #   kind_code: its QL_NODE_* number
  #   latency_us: reply latency in microseconds, nil when the node gave no reply
  NodeReport = Struct.new(:index, :address, :kind, :kind_code, :latency_us, keyword_init: true) do
    def to_s
      s = "node #{index} (#{address}): #{kind}"
      latency_us ? "#{s} in #{latency_us}us" : "#{s}, no reply"
    end
  end

  # The result codes of the C ABI: number => name. Numbers never change.
  CODES = {
    0 => "QL_OK", 1 => "QL_BUSY", 2 => "QL_QUORUM", 3 => "QL_VALIDITY", 4 => "QL_CANCELLED",
    5 => "QL_LOST", 6 => "QL_EXT_LIMIT", 7 => "QL_INVALID", 8 => "QL_CONNECTION", 9 => "QL_AUTH",
    10 => "QL_SCRIPT", 11 => "QL_MISCONFIGURED", 12 => "QL_TIMEOUT", 99 => "QL_INTERNAL"
  }.freeze

  # Why a held lock was lost (QL_LOST_*).
  LOST_REASONS = { 1 => :expired, 2 => :taken, 3 => :extension_limit }.freeze

  # Every failure of quorumlock. `code` is the C name ("QL_BUSY"), `code_number` its number;
  # `nodes` the per-node report of the call (empty when nothing was sent), `attempts` the
  # acquisition attempts made, `attempt_kinds` the node kinds of each kept attempt (oldest
  # first), `lost_reason` (:expired, :taken, :extension_limit) for LockLost.
  class Error < StandardError
    attr_reader :code_number, :nodes, :attempts, :attempt_kinds, :lost_reason, :op, :resource

    def initialize(message = nil, code_number: 7, nodes: [], attempts: 0, attempt_kinds: [],
                   lost_reason: nil, op: nil, resource: nil)
      @code_number = code_number
      @nodes = nodes.freeze
      @attempts = attempts
      @attempt_kinds = attempt_kinds.freeze
      @lost_reason = lost_reason
      @op = op
      @resource = resource
      super(message || code)
    end

    # The C name of the code, e.g. "QL_BUSY".
    def code
      CODES.fetch(code_number, "QL_UNKNOWN")
    end
  end

  class LockBusy < Error; end          # QL_BUSY: other owners hold the resource
  class QuorumNotReached < Error; end  # QL_QUORUM: node failures blocked the quorum
  class ValidityTooShort < Error; end  # QL_VALIDITY: quorum reached with too little validity left
  class Cancelled < Error; end         # QL_CANCELLED: the caller cancelled (interrupt, timeout)
  class LockLost < Error; end          # QL_LOST: the held lock expired or was taken over
  class ExtensionLimit < Error; end    # QL_EXT_LIMIT: an extension cap was reached
  class InvalidArgument < Error; end   # QL_INVALID: bad input, configuration or state; nothing sent
  class ConnectionFailed < Error; end  # QL_CONNECTION: fewer than a quorum of nodes reachable
  class AuthFailed < Error; end        # QL_AUTH: credentials or ACL refused
  class ScriptFailed < Error; end      # QL_SCRIPT: scripting unavailable
  class Misconfigured < Error; end     # QL_MISCONFIGURED: unsafe node settings
  class TimedOut < Error; end          # QL_TIMEOUT: no reply in time
  class InternalError < Error; end     # QL_INTERNAL: a bug (a panic caught in the engine)

  ERROR_CLASSES = {
    1 => LockBusy, 2 => QuorumNotReached, 3 => ValidityTooShort, 4 => Cancelled, 5 => LockLost,
    6 => ExtensionLimit, 7 => InvalidArgument, 8 => ConnectionFailed, 9 => AuthFailed,
    10 => ScriptFailed, 11 => Misconfigured, 12 => TimedOut, 99 => InternalError
  }.freeze

  # Error conversion from the C error object (internal).
  module ErrorConv
    module_function

    # An InvalidArgument raised by the binding itself, before anything reaches C (a nil,
    # a wrong type, a value C cannot represent).
    def invalid(msg, op: nil, resource: nil)
      InvalidArgument.new("QL_INVALID: #{msg}", code_number: 7, op: op, resource: resource)
    end

    # Converts (and frees) a C error. `code` is the call's result, used when err is NULL.
    def from_c(code, err_ptr, op:, resource: nil)
      return build(code, nil, op: op, resource: resource) if err_ptr.nil? || err_ptr.null?

      begin
        build(code, err_ptr, op: op, resource: resource)
      ensure
        Native.quorumlock_error_free(err_ptr)
      end
    end

    # Reads everything a C error holds; err_ptr stays owned by the caller.
    def build(code, err_ptr, op:, resource: nil)
      return ERROR_CLASSES.fetch(code, InternalError).new("#{CODES.fetch(code, 'QL_UNKNOWN')} in #{op}",
                                                         code_number: code, op: op, resource: resource) unless err_ptr

      code = Native.quorumlock_error_code(err_ptr)
      msg = Native.read_string { |b, l, o| Native.quorumlock_error_message(err_ptr, b, l, o) }
      nodes = read_nodes(err_ptr)
      kinds = read_attempts(err_ptr, nodes.size)
      klass = ERROR_CLASSES.fetch(code, InternalError)
      klass.new(msg.empty? ? CODES.fetch(code, "QL_UNKNOWN") : msg,
                code_number: code, nodes: nodes, attempts: Native.quorumlock_error_attempts(err_ptr),
                attempt_kinds: kinds, lost_reason: LOST_REASONS[Native.quorumlock_error_lost_reason(err_ptr)],
                op: op, resource: resource)
    end

    def read_nodes(err_ptr)
      kind = FFI::MemoryPointer.new(:uint32)
      lat = FFI::MemoryPointer.new(:uint64)
      Array.new(Native.quorumlock_error_node_count(err_ptr)) do |i|
        k = Native.quorumlock_error_node_kind(err_ptr, i, kind).zero? ? kind.read_uint32 : 23
        us = Native.quorumlock_error_node_latency_us(err_ptr, i, lat).zero? ? lat.read_uint64 : Native::NO_LATENCY
        addr = Native.read_string { |b, l, o| Native.quorumlock_error_node_address(err_ptr, i, b, l, o) }
        NodeReport.new(index: i, address: addr, kind: Native.quorumlock_node_kind_name(k), kind_code: k,
                       latency_us: us == Native::NO_LATENCY ? nil : us).freeze
      end
    end

    def read_attempts(err_ptr, node_count)
      kind = FFI::MemoryPointer.new(:uint32)
      Array.new(Native.quorumlock_error_attempt_count(err_ptr)) do |a|
        Array.new(node_count) do |i|
          k = Native.quorumlock_error_attempt_node_kind(err_ptr, a, i, kind).zero? ? kind.read_uint32 : 23
          Native.quorumlock_node_kind_name(k)
        end.freeze
      end
    end
  end
end
