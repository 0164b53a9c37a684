# frozen_string_literal: true

require "securerandom"
require "uri"
require_relative "../quorumlock"

module Quorumlock
  # redlock-rb 2.x's API over quorumlock: replace `require "redlock"` and `Redlock::Client`
  # with `require "quorumlock/redlock"` and `Quorumlock::Redlock::Client` (or add
  # `Redlock = Quorumlock::Redlock` after the require).
  #
  #   lock_manager = Quorumlock::Redlock::Client.new(["redis://10.0.0.1:6379", ...])
  #   lock_info = lock_manager.lock("resource", 2000)   # {validity:, resource:, value:} or false
  #   lock_manager.lock("resource", 2000, extend: lock_info)
  #   lock_manager.unlock(lock_info)
  #
  # Servers are URLs, redis-client style configuration Hashes ({url:} or {host:, port:, db:,
  # username:, password:, ssl:}), objects answering `config` (RedisClient) or `connection`
  # (Redis), or ConnectionPools of them; only their addresses are read: quorumlock opens its
  # own connections. The defaults are redlock-rb's: keys are the bare resource names (so
  # redlock-rb and quorumlock processes exclude each other during a migration), no restart
  # quarantine, TTLs up to 2^53 - 1 ms; quorumlock settings (Quorumlock::Client's keywords:
  # quarantine:, max_ttl:, fenced:, key_format:, key_prefix:, ...) go in the same options Hash.
  # Lock infos from any process (or from redlock-rb itself) can be unlocked and extended: by
  # value.
  module Redlock
    # Raised by lock! when the lock was not acquired ("failed to acquire lock on 'res'").
    class LockError < StandardError
      def initialize(resource)
        super("failed to acquire lock on '#{resource}'")
      end

      # The QL_* code of the failure ("QL_BUSY" when the resource was held).
      attr_accessor :code
    end

    # Raised by lock when node errors prevented the acquisition (the engine's QL_QUORUM:
    # fewer than a quorum of nodes could vote); `errors` holds one NodeError per failed
    # node, `code` is "QL_QUORUM".
    class LockAcquisitionError < LockError
      attr_reader :errors

      def initialize(message, errors)
        super(message)
        @errors = errors
      end
    end

    # One node's failure: `node` is the Quorumlock::NodeReport (index, address, kind, latency).
    class NodeError < StandardError
      attr_reader :node

      def initialize(node)
        @node = node
        super("#{node.address}: #{node.kind}")
      end
    end

    # The node kinds that are votes or operation results, not node errors.
    VOTE_KINDS = %w[Ok HeldByOther NotHeld Released Partial Pending].freeze

    class Client
      DEFAULT_REDIS_HOST    = ENV["DEFAULT_REDIS_HOST"] || "localhost"
      DEFAULT_REDIS_PORT    = ENV["DEFAULT_REDIS_PORT"] || "6379"
      DEFAULT_REDIS_URLS    = ["redis://#{DEFAULT_REDIS_HOST}:#{DEFAULT_REDIS_PORT}"].freeze
      DEFAULT_REDIS_TIMEOUT = 0.1
      DEFAULT_RETRY_COUNT   = 3
      DEFAULT_RETRY_DELAY   = 200
      DEFAULT_RETRY_JITTER  = 50
      CLOCK_DRIFT_FACTOR    = 0.01
      # The largest TTL redlock-rb users can give (2^53 - 1 ms), the engine's max_ttl limit.
      MAX_TTL = (2**53) - 1

      class << self
        # redlock-rb's testing mode (`require "quorumlock/redlock/testing"` is not needed):
        # :bypass grants every lock without touching the nodes, :fail refuses every lock.
        attr_accessor :testing_mode
      end

      REDLOCK_KEYS = %i[retry_count retry_delay retry_jitter redis_timeout time_source].freeze

      def self.default_time_source
        proc { (Process.clock_gettime(Process::CLOCK_MONOTONIC) * 1000).to_i }
      end

      # `servers`: URLs, configuration Hashes or Redis/RedisClient objects. `options`:
      # retry_count (3), retry_delay (200 ms), retry_jitter (50 ms), redis_timeout (seconds,
      # the per-node request deadline), time_source (accepted, unused: the engine measures
      # validity on its monotonic clock), plus Quorumlock::Client settings.
      def initialize(servers = DEFAULT_REDIS_URLS, options = {})
        options = options.dup
        unless servers.is_a?(Array)
          raise ErrorConv.invalid("servers must be an Array, got #{servers.inspect}", op: "connect")
        end

        @retry_count = options.delete(:retry_count) || DEFAULT_RETRY_COUNT
        @retry_delay = options.delete(:retry_delay) || DEFAULT_RETRY_DELAY
        @retry_jitter = options.delete(:retry_jitter) || DEFAULT_RETRY_JITTER
        timeout = options.delete(:redis_timeout)
        options.delete(:time_source)
        settings = { quarantine: :off, max_ttl: MAX_TTL, key_prefix: "", key_format: :bare }.merge(options)
        settings[:node_timeout] = (timeout * 1000).round if timeout.is_a?(Numeric) && !settings.key?(:node_timeout)
        @client = Quorumlock::Client.new(servers.map { |s| self.class.url_of(s) }, **settings)
      end

      # The Quorumlock::Client underneath (metrics, settings).
      attr_reader :client

      # Locks `resource` for `ttl` ms; returns {validity:, resource:, value:} or false.
      # Raises LockAcquisitionError when a quorum of nodes failed with errors.
      # Options: retry_count, retry_delay, retry_jitter, extend: lock_info (extends that lock;
      # never re-creates an expired one, whatever extend_only_if_locked says).
      # With a block: yields the lock info or false, unlocks after, returns true/false.
      def lock(resource, ttl, options = {}, &block)
        lock_info = try_lock(resource, ttl, options)
        return lock_info unless block

        begin
          yield lock_info
          !!lock_info
        ensure
          unlock(lock_info) if lock_info
        end
      end

      # Runs the block under the lock and returns its value; raises LockError if the lock was
      # not acquired.
      def lock!(resource, *args)
        raise "No block passed" unless block_given?

        lock(resource, *args) do |lock_info|
          raise LockError.new(resource).tap { |e| e.code = Thread.current[:quorumlock_redlock_code] } unless lock_info

          return yield
        end
      end

      # Releases a lock info ({resource:, value:}) taken in this process, in another one, or
      # by redlock-rb: compare-and-delete on every node, other owners' keys untouched; nodes
      # that fail are ignored (best effort, as in redlock-rb). A value the engine could never
      # have given (under 16 printable ASCII characters) raises Quorumlock::InvalidArgument.
      def unlock(lock_info)
        return if self.class.testing_mode == :bypass
        return if lock_info.nil? || lock_info == false

        native = native_of(lock_info)
        if native
          native.unlock
        else
          @client.unlock(lock_info)
        end
        nil
      end

      # The validity left (ms) of a lock of this process, or nil once it is no longer held
      # (and for lock infos of other processes: the C ABI cannot read a key's TTL).
      def get_remaining_ttl_for_lock(lock_info)
        native = native_of(lock_info)
        left = native&.remaining.to_i
        left.positive? ? left : nil
      end

      # true while a lock of this process is held.
      def valid_lock?(lock_info)
        !get_remaining_ttl_for_lock(lock_info).nil?
      end

      # Not available: reading another owner's lock needs an inspect call the C ABI lacks.
      def get_remaining_ttl_for_resource(_resource)
        raise NotImplementedError, "quorumlock's C ABI cannot inspect a resource's holder " \
                                   "(use valid_lock? / get_remaining_ttl_for_lock on your own locks)"
      end

      def locked?(resource)
        get_remaining_ttl_for_resource(resource)
      end

      # A node URL from what redlock-rb accepts as a server.
      def self.url_of(server)
        case server
        when String then server
        when Hash then url_from_hash(server)
        else
          if server.respond_to?(:config) && server.config.respond_to?(:host)
            c = server.config
            build_url(ssl: c.respond_to?(:ssl) && c.ssl, host: c.host, port: c.port,
                      db: c.respond_to?(:db) ? c.db : nil,
                      username: c.respond_to?(:username) ? c.username : nil,
                      password: c.respond_to?(:password) ? c.password : nil)
          elsif server.respond_to?(:connection) && server.connection.is_a?(Hash)
            url_from_hash(server.connection)
          elsif server.respond_to?(:with) && !server.is_a?(Array)
            server.with { |conn| url_of(conn) } # a ConnectionPool of clients
          else
            raise ErrorConv.invalid("cannot read a node address from #{server.class} (give a URL, a Hash " \
                                    "or a Redis/RedisClient object)", op: "connect")
          end
        end
      end

      def self.url_from_hash(h)
        h = h.transform_keys(&:to_sym)
        return h[:url] if h[:url]
        if h.key?(:sentinels)
          raise ErrorConv.invalid("sentinels are not supported: list the masters themselves", op: "connect")
        end

        build_url(ssl: h[:ssl], host: h[:host] || "localhost", port: h[:port] || 6379, db: h[:db],
                  username: h[:username], password: h[:password])
      end

      def self.build_url(ssl:, host:, port:, db:, username:, password:)
        auth = ""
        if password && !password.to_s.empty?
          user = username ? URI.encode_www_form_component(username.to_s) : ""
          auth = "#{user}:#{URI.encode_www_form_component(password.to_s)}@"
        end
        "#{ssl ? 'rediss' : 'redis'}://#{auth}#{host}:#{port}#{db ? "/#{db}" : ''}"
      end

      private

      def native_of(lock_info)
        return nil unless lock_info.is_a?(Hash)

        value = lock_info[:value]
        native = value.is_a?(String) ? Held.find(value) : nil
        native if native && native.resource.to_s == lock_info[:resource].to_s
      end

      def try_lock(resource, ttl, options)
        case self.class.testing_mode
        when :bypass
          return { validity: ttl, resource: resource,
                   value: options[:extend] ? options[:extend].fetch(:value) : SecureRandom.hex(20) }
        when :fail
          return false
        end
        if (target = options[:extend])
          return extend_lock(target, resource, ttl)
        end

        lock_opts = {
          retry_count: options[:retry_count] || @retry_count,
          retry_delay: options[:retry_delay] || @retry_delay,
          retry_jitter: options[:retry_jitter] || @retry_jitter,
          min_validity: 0
        }
        if lock_opts[:retry_delay].respond_to?(:call)
          raise ErrorConv.invalid("a callable retry_delay is not supported: the engine runs the retries " \
                                  "(give milliseconds)", op: "acquire")
        end

        info(@client.lock!(resource, ttl, **lock_opts))
      rescue LockBusy, ValidityTooShort => e
        Thread.current[:quorumlock_redlock_code] = e.code
        false
      rescue QuorumNotReached => e
        Thread.current[:quorumlock_redlock_code] = e.code
        errors = e.nodes.reject { |n| VOTE_KINDS.include?(n.kind) }.map { |n| NodeError.new(n) }
        msg = "Too many Redis errors prevented lock acquisition:\n#{errors.map { |x| "#{x.class}: #{x.message}" }.join("\n")}"
        raise LockAcquisitionError.new(msg, errors).tap { |x| x.code = e.code }
      end

      # Extends a lock info of this process through its handle, any other by value (with
      # `resource` and the info's value, as redlock-rb); never re-creates a lock that is gone.
      def extend_lock(target, resource, ttl)
        native = native_of(target)
        if native && native.resource.to_s == resource.to_s
          native.extend!(ttl)
          return info(native)
        end
        unless target.is_a?(Hash) && target[:value].is_a?(String)
          raise ErrorConv.invalid("extend: #{target.inspect} is not a lock info ({resource:, value:})", op: "extend")
        end

        { validity: @client.extend_by_value(resource, target[:value], ttl), resource: resource, value: target[:value] }
      rescue LockLost, ExtensionLimit, QuorumNotReached, ValidityTooShort => e
        Thread.current[:quorumlock_redlock_code] = e.code
        false
      end

      def info(native)
        h = { validity: native.validity, resource: native.resource, value: native.value }
        h[:token] = native.token if native.token
        h
      end
    end
  end
end
