# frozen_string_literal: true

module Quorumlock
  # Conversion of Ruby values to what the C ABI takes (internal). Types are checked here;
  # ranges are the engine's business, except for values C cannot represent at all.
  module Convert
    module_function

    U32_MAX = 0xFFFF_FFFF
    U64_MAX = 0xFFFF_FFFF_FFFF_FFFF

    QUARANTINE = { on: 0, strict: 1, off: 2 }.freeze
    EVICTION = { refuse: 0, warn: 1, off: 2 }.freeze
    KEY_FORMAT = { braced: 0, bare: 1 }.freeze

    # Client settings (Client.new keywords) other than lock defaults.
    CLIENT_KEYS = %i[quarantine quarantine_margin max_ttl connect_timeout key_prefix key_format
                     require_quorum notify drift_factor drift_constant eviction_check].freeze
    # Lock options: client defaults or per call.
    LOCK_KEYS = %i[ttl retry_count retry_delay retry_jitter min_validity node_timeout auto_extend
                   auto_extend_interval max_extensions max_hold value fenced fence_counter_ttl].freeze

    # A C copy of a byte string (embedded NULs kept), NUL-terminated, never zero-sized.
    def buffer(bytes)
      buf = FFI::MemoryPointer.new(:char, bytes.bytesize + 1)
      buf.put_bytes(0, bytes)
      buf
    end

    def invalid(msg, **kw)
      ErrorConv.invalid(msg, **kw)
    end

    # A resource name as bytes. Binary (ASCII-8BIT) strings are taken as they are; strings in
    # any other encoding must be valid and are sent as UTF-8. Symbols are their names.
    def resource(name, op:)
      name = name.to_s if name.is_a?(Symbol)
      raise invalid("the resource must be a String, got #{name.inspect}", op: op) unless name.is_a?(String)
      return name.b if name.encoding == Encoding::BINARY

      unless name.valid_encoding?
        raise invalid("the resource is not valid #{name.encoding} (use a binary String, " \
                      "String#b, for arbitrary bytes)", op: op)
      end
      name.encode(Encoding::UTF_8).b
    rescue EncodingError => e
      raise invalid("the resource cannot be converted to UTF-8: #{e.message}", op: op)
    end

    # A string setting (URL, prefix, value) as bytes; the C ABI checks its content.
    def text(value, what, op:)
      value = value.to_s if value.is_a?(Symbol)
      raise invalid("#{what} must be a String, got #{value.inspect}", op: op) unless value.is_a?(String)

      value.b
    end

    # A non-negative whole number that fits the C type (milliseconds, counts).
    def uint(value, what, op:, max: U64_MAX)
      unless value.is_a?(Integer)
        raise invalid("#{what} must be an Integer (milliseconds for durations), got #{value.inspect}", op: op)
      end
      raise invalid("#{what} must not be negative, got #{value}", op: op) if value.negative?
      raise invalid("#{what} is too large: #{value}", op: op) if value > max

      value
    end

    def bool(value, what, op:)
      raise invalid("#{what} must be true or false, got #{value.inspect}", op: op) unless [true, false].include?(value)

      value
    end

    def mode(value, table, what, op:)
      key = value.is_a?(String) ? value.to_sym : value
      table.fetch(key) do
        raise invalid("#{what} must be one of #{table.keys.map(&:inspect).join(', ')}, got #{value.inspect}", op: op)
      end
    end

    def check_keys(hash, allowed, op:)
      unknown = hash.keys - allowed
      raise invalid("unknown option#{'s' if unknown.size > 1} #{unknown.map(&:inspect).join(', ')}", op: op) unless unknown.empty?
    end

    # Calls a C setter that returns a result code; raises on failure.
    def set(code, op)
      raise ErrorConv.from_c(code, nil, op: op) unless code.zero?
    end

    # Builds C lock options from a hash of LOCK_KEYS, or returns nil for an empty hash (the
    # engine's defaults). The caller frees the pointer with quorumlock_lock_options_free.
    def lock_options(opts, op:)
      return nil if opts.empty?

      out = FFI::MemoryPointer.new(:pointer)
      set(Native.quorumlock_lock_options_new(out), op)
      ptr = out.read_pointer
      begin
        fill_lock_options(ptr, opts, op)
      rescue StandardError
        Native.quorumlock_lock_options_free(ptr)
        raise
      end
      ptr
    end

    def fill_lock_options(ptr, o, op)
      n = Native
      set(n.quorumlock_lock_options_set_ttl_ms(ptr, uint(o[:ttl], "ttl", op: op)), op) if o.key?(:ttl)
      if o.key?(:retry_count)
        set(n.quorumlock_lock_options_set_retry_count(ptr, uint(o[:retry_count], "retry_count", op: op, max: U32_MAX)), op)
      end
      if o.key?(:retry_delay) || o.key?(:retry_jitter)
        # A delay alone is a fixed delay; a jitter alone keeps the default delay of 100 ms.
        delay = o.key?(:retry_delay) ? uint(o[:retry_delay], "retry_delay", op: op) : 100
        jitter = o.key?(:retry_jitter) ? uint(o[:retry_jitter], "retry_jitter", op: op) : 0
        set(n.quorumlock_lock_options_set_retry_delay_ms(ptr, delay, jitter), op)
      end
      if o.key?(:min_validity)
        set(n.quorumlock_lock_options_set_min_validity_ms(ptr, uint(o[:min_validity], "min_validity", op: op)), op)
      end
      if o.key?(:node_timeout)
        set(n.quorumlock_lock_options_set_node_timeout_ms(ptr, uint(o[:node_timeout], "node_timeout", op: op)), op)
      end
      if o.key?(:auto_extend) || o.key?(:auto_extend_interval)
        on = o.key?(:auto_extend) ? bool(o[:auto_extend], "auto_extend", op: op) : true
        interval = o.key?(:auto_extend_interval) ? uint(o[:auto_extend_interval], "auto_extend_interval", op: op) : 0
        set(n.quorumlock_lock_options_set_auto_extend(ptr, on, interval), op)
      end
      if o.key?(:max_extensions) || o.key?(:max_hold)
        count = o.key?(:max_extensions) ? uint(o[:max_extensions], "max_extensions", op: op, max: U32_MAX) : 0
        hold = o.key?(:max_hold) ? uint(o[:max_hold], "max_hold", op: op) : 0
        set(n.quorumlock_lock_options_set_limits(ptr, count, hold), op)
      end
      if o.key?(:fenced) || o.key?(:fence_counter_ttl)
        on = o.key?(:fenced) ? bool(o[:fenced], "fenced", op: op) : true
        counter_ttl = o.key?(:fence_counter_ttl) ? uint(o[:fence_counter_ttl], "fence_counter_ttl", op: op) : 0
        set(n.quorumlock_lock_options_set_fenced(ptr, on, counter_ttl), op)
      end
      return unless o.key?(:value)

      bytes = text(o[:value], "value", op: op)
      err = FFI::MemoryPointer.new(:pointer)
      buf = Convert.buffer(bytes)
      code = n.quorumlock_lock_options_set_value(ptr, buf, bytes.bytesize, err)
      raise ErrorConv.from_c(code, err.read_pointer, op: op) unless code.zero?
    end
  end
end
