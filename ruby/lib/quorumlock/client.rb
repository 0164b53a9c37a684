# frozen_string_literal: true

module Quorumlock
  # A client over N independent Redis masters (or Redis Cluster members given as
  # `redis+cluster://h:p,h:p`). Safe to share between threads.
  #
  #   client = Quorumlock::Client.new(["redis://10.0.0.1:6379", "redis://10.0.0.2:6379",
  #                                    "redis://10.0.0.3:6379"])
  #   lock = client.lock("invoice:7", 10_000)     # => Quorumlock::Lock, or false if busy
  #   ...
  #   client.unlock(lock)
  #
  # Settings (keywords, durations in integer milliseconds):
  #   quarantine: :on (default), :strict or :off; quarantine_margin: ms
  #   max_ttl:, connect_timeout:, key_prefix:, require_quorum:, notify:,
  #   drift_factor:, drift_constant:, eviction_check: :refuse (default), :warn or :off,
  #   key_format: :braced (default, keys "<key_prefix>{<resource>}") or :bare
  #   ("<key_prefix><resource>": with key_prefix: "", the bare name other Redlock libraries use)
  # and defaults for every lock taken through it:
  #   ttl:, retry_count:, retry_delay:, retry_jitter:, min_validity:, node_timeout:,
  #   auto_extend:, auto_extend_interval:, max_extensions:, max_hold:, fenced:,
  #   fence_counter_ttl:, value:
  class Client
    def initialize(urls, **settings)
      op = "connect"
      unless urls.is_a?(Array) && !urls.empty?
        raise ErrorConv.invalid("urls must be a non-empty Array of node URLs, got #{urls.inspect}", op: op)
      end

      Convert.check_keys(settings, Convert::CLIENT_KEYS + Convert::LOCK_KEYS, op: op)
      @defaults = settings.select { |k, _| Convert::LOCK_KEYS.include?(k) }.freeze
      # Checked now, so a bad default fails here and not at the first lock; also the engine's
      # defaults for the calls that take no options (release and extend by value).
      opts = Convert.lock_options(@defaults, op: op)
      @gate = Mutex.new
      @idle = ConditionVariable.new
      @active = 0
      begin
        @ptr = connect(urls, settings, opts, op)
      ensure
        Native.quorumlock_lock_options_free(opts) if opts
      end
    end

    # Number of configured nodes N (0 once closed).
    def node_count
      use("node_count") { |c| Native.quorumlock_client_node_count(c) }
    rescue InvalidArgument
      0
    end

    # Locks `resource` (a String, or an Array of Strings locked all or nothing) for `ttl`
    # milliseconds, retrying as the options say. Returns a Lock, or false when other owners
    # hold it (QL_BUSY) or the quorum left too little validity (QL_VALIDITY). Raises
    # QuorumNotReached when node failures blocked the quorum, InvalidArgument for bad
    # input, Cancelled when the calling thread is interrupted while waiting.
    #
    # Per-call options: the lock defaults listed on the class, and
    #   wait: ms     keep retrying for up to this long (instead of retry_count)
    #   try: true    one attempt, no retries
    #   on_lost: ->(lock, error) { }   called once (on a watcher thread) when the lock is lost
    #   extend: lock extend that lock instead (redlock-rb's form); returns it or false. A
    #                lock info Hash of another process is extended by value (never re-created
    #                once gone) and a new lock info Hash {validity:, resource:, value:} returned
    #
    # With a block (redlock-rb's form): yields the Lock or false, unlocks after the block,
    # and returns true if the lock was acquired.
    def lock(resource, ttl = nil, **opts)
      info = begin
        lock!(resource, ttl, **opts)
      rescue LockBusy, ValidityTooShort
        false
      rescue LockLost, ExtensionLimit, QuorumNotReached
        raise unless opts[:extend]

        false
      end
      return info unless block_given?

      begin
        yield info
        !!info
      ensure
        unlock(info) if info
      end
    end

    # As lock, but raises the typed error (LockBusy, QuorumNotReached, ...) instead of
    # returning false. With a block: yields the Lock, unlocks after the block, returns the
    # block's value, and raises LockLost after the block if the lock was lost (expired or
    # taken over) before it was released.
    def lock!(resource, ttl = nil, **opts)
      lk = acquire(resource, ttl, opts)
      return lk unless block_given?
      return (begin; yield lk; ensure; unlock(lk); end) if lk.is_a?(Hash) # extended by value

      begin
        result = yield lk
      rescue Exception # rubocop:disable Lint/RescueException
        begin
          lk.unlock
        rescue StandardError
          nil # the block's exception matters more
        end
        raise
      end
      lost = lk.lost_error
      held = lk.unlock
      raise lost if lost
      raise LockLost.new("QL_LOST: the lock was no longer held on a quorum of nodes at release",
                         code_number: 5, lost_reason: :expired, op: "release", resource: lk.resource.to_s) unless held

      result
    end

    # One attempt, no retries; a Lock or false.
    def try_lock(resource, ttl = nil, **opts)
      lock(resource, ttl, **opts, try: true)
    end

    # Releases a lock: a Lock, or a lock info Hash ({resource:, value:}, String keys too) from
    # this process or any other (released by value: compare-and-delete on every node). Returns
    # true if a quorum of nodes still held it. Raises InvalidArgument for anything else.
    def unlock(lock)
      local = find_lock(lock, "release")
      return local.unlock if local

      resource, value = info_of(lock, "release")
      release_by_value(resource, value)
    end
    alias release unlock

    # Extends a lock to `ttl` ms from now (see Lock#extend): true or false. A lock info Hash
    # of another process is extended by value (`ttl` needed, or a client default ttl:); an
    # expired or released lock is never re-created. `extend(SomeModule)` is Object#extend.
    def extend(lock, *rest)
      return super if lock.is_a?(Module)

      local = find_lock(lock, "extend")
      return local.extend(*rest) if local

      resource, value = info_of(lock, "extend")
      extend_by_value(resource, value, rest.first)
      true
    rescue LockLost, ExtensionLimit, QuorumNotReached, ValidityTooShort
      false
    end

    # Releases the keys of `resource` (a String, or an Array for a multi-resource lock) that
    # hold `value`, on every node, whoever took them (another process, or the library this one
    # replaces). Other owners' keys are never touched. Returns true if a quorum of nodes still
    # held the value. Raises InvalidArgument for a value the engine would never have given
    # (fewer than 16 printable ASCII characters).
    def release_by_value(resource, value)
      by_value(resource, value, "release") do |c, ptrs, lens, n, vbuf, vlen, err|
        held = FFI::MemoryPointer.new(:bool)
        code = Native.quorumlock_client_release_value(c, ptrs, lens, n, vbuf, vlen, held, err)
        [code, held.read(:bool)]
      end
    end

    # Extends the keys of `resource` that hold `value` to `ttl` ms from now on a quorum of
    # nodes; keys that are gone are never re-created. Returns the validity left (ms). Raises
    # LockLost (gone or taken), QuorumNotReached / ValidityTooShort (transient) or
    # InvalidArgument. `ttl` nil takes the client's default ttl:.
    def extend_by_value(resource, value, ttl = nil)
      ttl = @defaults[:ttl] if ttl.nil?
      raise ErrorConv.invalid("extend by value needs a ttl (ms)", op: "extend", resource: label_of(resource)) if ttl.nil?

      ms = Convert.uint(ttl, "ttl", op: "extend")
      by_value(resource, value, "extend") do |c, ptrs, lens, n, vbuf, vlen, err|
        left = FFI::MemoryPointer.new(:uint64)
        code = Native.quorumlock_client_extend_value(c, ptrs, lens, n, vbuf, vlen, ms, left, err)
        [code, left.read_uint64]
      end
    end

    # Frees the client (waits for calls in progress on it). Locks taken through it stay
    # usable: they can still be extended and released. Closing twice does nothing.
    def close
      ptr = @gate.synchronize do
        @closed = true
        @idle.wait(@gate) while @active.positive?
        p = @ptr
        @ptr = nil
        p
      end
      ptr&.free
      nil
    end

    def closed?
      @ptr.nil?
    end

    # The client's counters and latency histograms in the Prometheus text format.
    def metrics_prometheus
      use("metrics") do |c|
        out = FFI::MemoryPointer.new(:pointer)
        Convert.set(Native.quorumlock_client_metrics(c, out), "metrics")
        m = out.read_pointer
        begin
          Native.read_string { |b, l, o| Native.quorumlock_metrics_prometheus(m, b, l, o) }
        ensure
          Native.quorumlock_metrics_free(m)
        end
      end
    end

    def inspect
      "#<#{self.class} nodes=#{node_count}#{' closed' if closed?}>"
    end

    private

    def connect(urls, settings, opts, op)
      out = FFI::MemoryPointer.new(:pointer)
      Convert.set(Native.quorumlock_config_new(out), op)
      cfg = out.read_pointer
      begin
        configure(cfg, urls, settings, op)
        Convert.set(Native.quorumlock_config_set_lock_options(cfg, opts), op) if opts
        err = FFI::MemoryPointer.new(:pointer)
        code = Native.quorumlock_client_new(cfg, out, err)
        raise ErrorConv.from_c(code, err.read_pointer, op: op) unless code.zero?

        FFI::AutoPointer.new(out.read_pointer, Native.method(:quorumlock_client_free))
      ensure
        Native.quorumlock_config_free(cfg)
      end
    end

    def configure(cfg, urls, s, op)
      n = Native
      err = FFI::MemoryPointer.new(:pointer)
      urls.each do |url|
        bytes = Convert.text(url, "a node URL", op: op)
        code = n.quorumlock_config_add_node(cfg, Convert.buffer(bytes), bytes.bytesize, err)
        raise ErrorConv.from_c(code, err.read_pointer, op: op) unless code.zero?
      end
      if s.key?(:quarantine) || s.key?(:quarantine_margin)
        mode = s.key?(:quarantine) ? Convert.mode(s[:quarantine], Convert::QUARANTINE, "quarantine", op: op) : 0
        margin = s.key?(:quarantine_margin) ? Convert.uint(s[:quarantine_margin], "quarantine_margin", op: op) : 0
        Convert.set(n.quorumlock_config_set_quarantine(cfg, mode, margin), op)
      end
      if s.key?(:eviction_check)
        Convert.set(n.quorumlock_config_set_eviction_check(
                      cfg, Convert.mode(s[:eviction_check], Convert::EVICTION, "eviction_check", op: op)
                    ), op)
      end
      Convert.set(n.quorumlock_config_set_max_ttl_ms(cfg, Convert.uint(s[:max_ttl], "max_ttl", op: op)), op) if s.key?(:max_ttl)
      if s.key?(:connect_timeout)
        Convert.set(n.quorumlock_config_set_connect_timeout_ms(cfg, Convert.uint(s[:connect_timeout], "connect_timeout", op: op)), op)
      end
      if s.key?(:key_prefix)
        prefix = Convert.text(s[:key_prefix], "key_prefix", op: op)
        Convert.set(n.quorumlock_config_set_key_prefix(cfg, Convert.buffer(prefix), prefix.bytesize), op)
      end
      if s.key?(:require_quorum)
        Convert.set(n.quorumlock_config_set_require_quorum(cfg, Convert.bool(s[:require_quorum], "require_quorum", op: op)), op)
      end
      Convert.set(n.quorumlock_config_set_notify(cfg, Convert.bool(s[:notify], "notify", op: op)), op) if s.key?(:notify)
      if s.key?(:key_format)
        Convert.set(n.quorumlock_config_set_key_format(
                      cfg, Convert.mode(s[:key_format], Convert::KEY_FORMAT, "key_format", op: op)
                    ), op)
      end
      return unless s.key?(:drift_factor) || s.key?(:drift_constant)

      factor = s.fetch(:drift_factor, 0.01)
      raise ErrorConv.invalid("drift_factor must be a Float, got #{factor.inspect}", op: op) unless factor.is_a?(Numeric)

      constant = s.key?(:drift_constant) ? Convert.uint(s[:drift_constant], "drift_constant", op: op) : 2
      Convert.set(n.quorumlock_config_set_drift(cfg, factor.to_f, constant), op)
    end

    # Runs the block with the live C client; InvalidArgument once closed.
    def use(op, resource = nil)
      @gate.synchronize do
        raise ErrorConv.invalid("the client is closed", op: op, resource: resource) if @closed || @ptr.nil?

        @active += 1
      end
      begin
        yield @ptr
      ensure
        @gate.synchronize do
          @active -= 1
          @idle.broadcast if @active.zero?
        end
      end
    end

    # The Lock of this process a Lock or lock info stands for, or nil for a lock info Hash of
    # another process (acted on by value). InvalidArgument for anything else.
    def find_lock(lock, op)
      return lock if lock.is_a?(Lock)

      resource, value = info_of(lock, op)
      found = Held.find(value)
      found if found && (found.resource == resource || found.resource.to_s == resource.to_s)
    end

    # [resource, value] of a lock info Hash (Symbol or String keys).
    def info_of(info, op)
      unless info.is_a?(Hash)
        raise ErrorConv.invalid("#{info.inspect} is not a lock (a Quorumlock::Lock or a lock info Hash " \
                                "with :resource and :value)", op: op)
      end

      resource = info.key?(:resource) ? info[:resource] : info["resource"]
      value = info.key?(:value) ? info[:value] : info["value"]
      raise ErrorConv.invalid("the lock info has no String :value, got #{value.inspect}", op: op) unless value.is_a?(String)
      raise ErrorConv.invalid("the lock info has no :resource", op: op) if resource.nil?

      [resource, value]
    end

    def label_of(resource)
      resource.is_a?(Array) ? resource.map(&:to_s).join(",") : resource.to_s
    end

    # Converts a resource (or list) and a value for a by-value call; the block gets the C
    # arguments and returns [code, result].
    def by_value(resource, value, op)
      label = label_of(resource)
      list = resource.is_a?(Array) ? resource : [resource]
      raise ErrorConv.invalid("no resources", op: op, resource: label) if list.empty?

      names = list.map { |r| Convert.resource(r, op: op) }
      bytes = Convert.text(value, "value", op: op)
      bufs = names.map { |b| Convert.buffer(b) }
      ptrs = FFI::MemoryPointer.new(:pointer, names.size)
      ptrs.write_array_of_pointer(bufs)
      lens = FFI::MemoryPointer.new(:size_t, names.size)
      names.each_with_index { |b, i| lens.put(:size_t, i * FFI.type_size(:size_t), b.bytesize) }
      err = FFI::MemoryPointer.new(:pointer)
      code, result = use(op, label) do |c|
        yield c, ptrs, lens, names.size, Convert.buffer(bytes), bytes.bytesize, err
      end
      raise ErrorConv.from_c(code, err.read_pointer, op: op, resource: label) unless code.zero?

      result
    end

    def acquire(resource, ttl, opts)
      op = "acquire"
      Convert.check_keys(opts, Convert::LOCK_KEYS + %i[wait try on_lost extend], op: op)
      if (target = opts[:extend])
        lk = find_lock(target, "extend")
        on = lk ? lk.resource : info_of(target, "extend").first
        if on != resource && on.to_s != resource.to_s
          raise ErrorConv.invalid("extend: the lock is on #{on.inspect}, not #{resource.inspect}", op: "extend")
        end
        return lk.extend!(ttl) if lk

        # A lock info of another process: extended by value, a new lock info returned.
        value = info_of(target, "extend").last
        return { validity: extend_by_value(resource, value, ttl), resource: resource, value: value }
      end

      merged = @defaults.merge(opts.select { |k, _| Convert::LOCK_KEYS.include?(k) })
      unless ttl.nil?
        merged[:ttl] = ttl
        Convert.uint(ttl, "ttl", op: op)
      end
      on_lost = opts[:on_lost]
      if on_lost && !on_lost.respond_to?(:call)
        raise ErrorConv.invalid("on_lost must respond to call, got #{on_lost.inspect}", op: op)
      end

      multi = resource.is_a?(Array)
      names = multi ? resource.map { |r| Convert.resource(r, op: op) } : [Convert.resource(resource, op: op)]
      label = multi ? resource.map(&:to_s).join(",") : resource.to_s
      try = opts.key?(:try) ? Convert.bool(opts[:try], "try", op: op) : false
      wait = opts.key?(:wait) && !opts[:wait].nil? ? Convert.uint(opts[:wait], "wait", op: op) : nil
      raise ErrorConv.invalid("wait and try exclude each other", op: op) if try && wait
      raise ErrorConv.invalid("wait is not available for several resources", op: op) if multi && wait

      merged[:retry_count] = 0 if multi && try
      copts = Convert.lock_options(merged, op: op)
      begin
        ptr = use(op, label) { |c| call_acquire(c, names, copts, multi, try, wait, label) }
      ensure
        Native.quorumlock_lock_options_free(copts) if copts
      end
      auto = merged[:auto_extend] == true || (merged.key?(:auto_extend_interval) && !merged.key?(:auto_extend))
      lk = Lock.new(ptr, resource: resource, auto_extend: auto, on_lost: on_lost)
      Held.add(lk) unless auto
      lk
    end

    # Calls the C acquire; returns the lock pointer or raises. A call that may wait runs on a
    # helper thread with a cancel handle, so an interrupt of the calling thread (Ctrl-C,
    # Thread#raise, Timeout) cancels it: the engine cleans its keys up.
    def call_acquire(client, names, copts, multi, try, wait, label)
      out = FFI::MemoryPointer.new(:pointer)
      err = FFI::MemoryPointer.new(:pointer)
      bufs = names.map { |b| Convert.buffer(b) }
      if try && !multi
        code = Native.quorumlock_client_try_acquire(client, bufs[0], names[0].bytesize, copts, out, err)
        return finish(code, out, err, label)
      end

      cout = FFI::MemoryPointer.new(:pointer)
      Convert.set(Native.quorumlock_cancel_new(cout), "acquire")
      cancel = cout.read_pointer
      ptrs = lens = nil
      if multi
        ptrs = FFI::MemoryPointer.new(:pointer, names.size)
        ptrs.write_array_of_pointer(bufs)
        lens = FFI::MemoryPointer.new(:size_t, names.size)
        names.each_with_index { |b, i| lens.put(:size_t, i * FFI.type_size(:size_t), b.bytesize) }
      end
      worker = Thread.new do
        if multi
          Native.quorumlock_client_acquire_multi(client, ptrs, lens, names.size, copts, cancel, out, err)
        elsif wait
          Native.quorumlock_client_acquire_timeout(client, bufs[0], names[0].bytesize, copts, wait, cancel, out, err)
        else
          Native.quorumlock_client_acquire(client, bufs[0], names[0].bytesize, copts, cancel, out, err)
        end
      end
      worker.report_on_exception = false
      finished = false
      begin
        code = worker.value
        finished = true
      ensure
        unless finished
          Native.quorumlock_cancel_trigger(cancel)
          Thread.handle_interrupt(Object => :never) do
            c = begin
              worker.value
            rescue StandardError
              nil
            end
            if c&.zero?
              Native.quorumlock_lock_free(out.read_pointer) # released in the background
            elsif c
              Native.quorumlock_error_free(err.read_pointer)
            end
          end
        end
        Native.quorumlock_cancel_free(cancel)
      end
      finish(code, out, err, label)
    end

    def finish(code, out, err, label)
      raise ErrorConv.from_c(code, err.read_pointer, op: "acquire", resource: label) unless code.zero?

      out.read_pointer
    end
  end
end
