# frozen_string_literal: true

module Quorumlock
  # A held (or lost, or released) distributed lock, returned by Client#lock.
  #
  # Reads like redlock-rb's lock info: lock[:validity], lock[:resource], lock[:value]
  # (and lock[:token] when fenced), or to_h. `remaining` is the validity left now, on the
  # engine's monotonic clock: act on the protected resource only while it is positive.
  class Lock
    # The resource name as given (an Array for a multi-resource lock), the random value
    # (40 hex characters), the TTL it was acquired with (ms, from the engine), and the
    # validity (ms) left when the acquisition returned.
    attr_reader :resource, :value, :ttl, :validity

    def initialize(ptr, resource:, auto_extend:, on_lost: nil)
      @ptr = FFI::AutoPointer.new(ptr, Native.method(:quorumlock_lock_free))
      @resource = resource.frozen? ? resource : resource.dup.freeze
      @ttl = Native.quorumlock_lock_ttl_ms(@ptr)
      @auto_extend = auto_extend
      @on_lost = on_lost
      @validity = Native.quorumlock_lock_remaining_ms(@ptr)
      @value = Native.read_string { |b, l, o| Native.quorumlock_lock_value(@ptr, b, l, o) }.freeze
      @tokens = read_tokens.freeze
      @state = Mutex.new
      @released = false
      @lost_error = nil
      LostWatch.add(self) if on_lost
    end

    # Validity left in milliseconds; 0 once expired, lost or released.
    def remaining
      Native.quorumlock_lock_remaining_ms(@ptr)
    end

    # True while held and within validity.
    def held?
      remaining.positive?
    end

    def released?
      @released
    end

    def auto_extending?
      @auto_extend
    end

    # True once the lock ran out of validity (expired, taken over, or an extension cap hit)
    # without having been released.
    def lost?
      !lost_reason.nil?
    end

    # The LockLost error of a lost lock (its reason in lost_reason), or nil while it is not
    # lost. Built from the engine's polled loss reason: no node report.
    def lost_error
      return @lost_error if @lost_error

      reason = lost_reason
      return nil unless reason

      @state.synchronize do
        @lost_error ||= LockLost.new(LOST_MESSAGES.fetch(reason), code_number: 5, lost_reason: reason,
                                                                  op: "lost", resource: name)
      end
    end

    LOST_MESSAGES = {
      expired: "QL_LOST: the lock's validity ran out",
      taken: "QL_LOST: another owner holds the lock's keys",
      extension_limit: "QL_LOST: the auto-extension stopped at its cap and the validity ran out"
    }.freeze

    # :expired, :taken or :extension_limit for a lost lock (the engine's reason, polled
    # without sending anything), else nil; nil after a release.
    def lost_reason
      return nil if @released

      LOST_REASONS[Native.quorumlock_lock_lost_reason(@ptr)]
    end

    # The fencing token (the first resource's, in sorted order) of a lock acquired with
    # `fenced: true`, else nil. Pass it to the protected resource (Quorumlock.fence_check_script).
    def token
      @tokens.first
    end

    # Every fencing token, one per resource in sorted order ([] when not fenced).
    def tokens
      @tokens
    end

    def to_h
      h = { validity: @validity, resource: @resource, value: @value }
      h[:token] = token if token
      h
    end

    def [](key)
      to_h[key]
    end

    # Extends the lock to `ttl` ms (default: the TTL it was acquired with) from now on a
    # quorum of nodes. Never revives an expired lock. Returns true, or false when it could
    # not be extended (lost, a cap, node failures: see last_extend_error). Raises
    # InvalidArgument for bad input or a released lock. `extend(SomeModule)` is Object#extend.
    def extend(ttl = nil, *more)
      return super if ttl.is_a?(Module)

      extend!(ttl)
      true
    rescue LockLost, ExtensionLimit, QuorumNotReached, ValidityTooShort => e
      @last_extend_error = e
      false
    end

    # The error of the last extend that returned false.
    attr_reader :last_extend_error

    # As extend, but raises the typed error (LockLost, ExtensionLimit, QuorumNotReached,
    # ValidityTooShort, InvalidArgument) and returns self.
    def extend!(ttl = nil)
      ms = ttl.nil? ? @ttl : Convert.uint(ttl, "ttl", op: "extend")
      err = FFI::MemoryPointer.new(:pointer)
      code = Native.quorumlock_lock_extend(@ptr, ms, err)
      raise ErrorConv.from_c(code, err.read_pointer, op: "extend", resource: name) unless code.zero?

      @validity = remaining
      self
    end

    # Releases the lock on every node (compare-and-delete) and stops its auto-extension.
    # Returns true if a quorum of nodes still held it, false if it had expired or been
    # taken over (not an error). Idempotent.
    def unlock
      @state.synchronize do
        @releasing = true
        held = FFI::MemoryPointer.new(:bool)
        err = FFI::MemoryPointer.new(:pointer)
        code = Native.quorumlock_lock_release(@ptr, held, err)
        unless code.zero?
          @releasing = false
          raise ErrorConv.from_c(code, err.read_pointer, op: "release", resource: name)
        end
        was_released = @released
        @released = true
        Held.delete(self)
        was_released ? false : held.read(:bool)
      end
    end
    alias release unlock

    # Starts or stops the automatic extension (every ttl / 3 by default).
    def auto_extend=(on)
      Convert.bool(on, "auto_extend", op: "auto_extend")
      err = FFI::MemoryPointer.new(:pointer)
      code = Native.quorumlock_lock_set_auto_extend(@ptr, on, err)
      raise ErrorConv.from_c(code, err.read_pointer, op: "auto_extend", resource: name) unless code.zero?

      @auto_extend = on
    end

    def inspect
      "#<#{self.class} resource=#{@resource.inspect} remaining=#{remaining}ms#{' released' if @released}>"
    end

    # The on_lost callable (internal: LostWatch calls it once).
    def __on_lost
      @on_lost
    end

    private

    def name
      @resource.is_a?(Array) ? @resource.join(",") : @resource.to_s
    end

    def read_tokens
      count = Native.quorumlock_lock_token_count(@ptr)
      out = FFI::MemoryPointer.new(:uint64)
      Array.new(count) do |i|
        Native.quorumlock_lock_token_at(@ptr, i, out).zero? ? out.read_uint64 : nil
      end.compact
    end
  end

  # Locks without auto-extension are kept here until released or expired, so a lock whose
  # object is dropped stays held until its TTL runs out (as with redlock-rb), instead of
  # being released when the garbage collector frees it.
  module Held
    @mutex = Mutex.new
    @locks = {}
    @next_sweep = 64

    # Sweeps out released and expired locks whenever the registry doubled since the last
    # sweep, so adding stays cheap with many locks held.
    def self.add(lock)
      @mutex.synchronize do
        if @locks.size >= @next_sweep
          @locks.delete_if { |_, l| l.released? || l.remaining.zero? }
          @next_sweep = [64, @locks.size * 2].max
        end
        @locks[lock.object_id] = lock
      end
    end

    def self.delete(lock)
      @mutex.synchronize { @locks.delete(lock.object_id) }
    end

    # Finds a held lock of this process by its value (for Hash lock infos).
    def self.find(value)
      @mutex.synchronize { @locks.each_value.find { |l| l.value == value } }
    end

    def self.size
      @mutex.synchronize { @locks.size }
    end
  end

  # Delivers on_lost callbacks by polling (one Ruby thread per process, running only while
  # some lock has a callback). The C ABI's lost callback runs on an engine thread, and
  # ruby-ffi would run a Ruby block from there by handing it to a Ruby thread and blocking the
  # engine thread until that thread got the GVL: an engine worker stalled for as long as any
  # Ruby thread holds the GVL, and a hang if that happens at exit. Polling
  # quorumlock_lock_remaining_ms (which never blocks) avoids both.
  module LostWatch
    @mutex = Mutex.new
    @locks = []
    @thread = nil
    @pid = nil
    @interval = 0.05

    class << self
      # Seconds between two polls (default 0.05): a loss is reported within about this long.
      attr_accessor :interval

      def add(lock)
        @mutex.synchronize do
          # A fork child inherits the parent's list; those locks are not its own.
          @locks = [] if @pid && @pid != Process.pid
          @locks << lock
          if @thread.nil? || !@thread.alive? || @pid != Process.pid
            @pid = Process.pid
            @thread = Thread.new { run }
            @thread.name = "quorumlock-lost-watch" if @thread.respond_to?(:name=)
            @thread.report_on_exception = false
          end
        end
      end

      def watching
        @mutex.synchronize { @locks.size }
      end

      private

      def run
        loop do
          sleep(@interval)
          current = @mutex.synchronize do
            @locks.reject! { |l| l.released? }
            @locks.dup
          end
          lost = current.select(&:lost?)
          @mutex.synchronize do
            @locks -= lost
            if @locks.empty? && lost.empty?
              @thread = nil
              return
            end
          end
          lost.each { |l| fire(l) }
        end
      end

      def fire(lock)
        err = lock.lost_error
        lock.__on_lost.call(lock, err)
      rescue StandardError => e
        warn "quorumlock: on_lost callback raised #{e.class}: #{e.message}"
      end
    end
  end
end
