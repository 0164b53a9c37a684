# frozen_string_literal: true

require "ffi"

module Quorumlock
  # Raised when libquorumlock cannot be found or loaded; says where it looked.
  class LibraryNotFound < LoadError; end

  # The C ABI of libquorumlock (include/quorumlock.h), attached with ruby-ffi. Calls that
  # wait for the network are attached with `blocking: true`, so other Ruby threads run while
  # they wait. Nothing here holds lock logic: Client and Lock convert types and errors.
  module Native
    extend FFI::Library

    SONAME = "libquorumlock.so.0"

    # Where the library is looked for, in order:
    # 1. QUORUMLOCK_LIB: the library file, or a directory holding it;
    # 2. the libdir pkg-config gives for `quorumlock` (PKG_CONFIG_PATH is honoured);
    # 3. /usr/local/lib, ~/.local/lib, /usr/lib and /usr/lib/<multiarch>;
    # 4. the dynamic loader's own search (ldconfig cache, LD_LIBRARY_PATH).
    def self.candidates
      list = []
      if (env = ENV["QUORUMLOCK_LIB"]) && !env.empty?
        list << (File.directory?(env) ? File.join(env, "libquorumlock.so") : env)
        return list
      end
      if (dir = pkg_config_libdir)
        list << File.join(dir, "libquorumlock.so")
      end
      home = Dir.respond_to?(:home) ? (Dir.home rescue nil) : nil
      dirs = ["/usr/local/lib"]
      dirs << File.join(home, ".local/lib") if home
      dirs += ["/usr/lib", "/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64"]
      dirs.each { |d| list << File.join(d, "libquorumlock.so") }
      list << SONAME
      list.uniq
    end

    def self.pkg_config_libdir
      out = IO.popen(["pkg-config", "--variable=libdir", "quorumlock"], err: File::NULL, &:read)
      dir = out.to_s.strip
      $?.success? && !dir.empty? ? dir : nil
    rescue SystemCallError
      nil
    end

    def self.locate
      tried = []
      candidates.each do |path|
        next if path.include?("/") && !File.exist?(path)

        begin
          ffi_lib path
          return path
        rescue LoadError => e
          tried << "#{path}: #{e.message.lines.first.to_s.strip}"
        end
      end
      raise LibraryNotFound, "libquorumlock not found. Install it (`make install PREFIX=...` in the " \
                             "quorumlock repository) and set QUORUMLOCK_LIB to the library file or its directory, " \
                             "or put its lib/pkgconfig on PKG_CONFIG_PATH. Looked at: " \
                             "#{candidates.join(', ')}#{tried.empty? ? '' : "; errors: #{tried.join('; ')}"}"
    end

    LIBRARY_PATH = locate

    typedef :uint32, :result
    typedef :pointer, :handle

    attach_function :quorumlock_version, [], :string
    attach_function :quorumlock_result_name, [:uint32], :string
    attach_function :quorumlock_node_kind_name, [:uint32], :string
    attach_function :quorumlock_fence_check_script, [], :string

    # Configuration.
    attach_function :quorumlock_config_new, [:pointer], :result
    attach_function :quorumlock_config_free, [:handle], :void
    attach_function :quorumlock_config_add_node, %i[handle pointer size_t pointer], :result
    attach_function :quorumlock_config_set_drift, %i[handle double uint64], :result
    attach_function :quorumlock_config_set_max_ttl_ms, %i[handle uint64], :result
    attach_function :quorumlock_config_set_connect_timeout_ms, %i[handle uint64], :result
    attach_function :quorumlock_config_set_key_prefix, %i[handle pointer size_t], :result
    attach_function :quorumlock_config_set_require_quorum, %i[handle bool], :result
    attach_function :quorumlock_config_set_notify, %i[handle bool], :result
    attach_function :quorumlock_config_set_quarantine, %i[handle uint32 uint64], :result
    attach_function :quorumlock_config_set_eviction_check, %i[handle uint32], :result
    attach_function :quorumlock_config_set_key_format, %i[handle uint32], :result
    attach_function :quorumlock_config_set_lock_options, %i[handle handle], :result

    # Client.
    attach_function :quorumlock_client_new, %i[handle pointer pointer], :result, blocking: true
    attach_function :quorumlock_client_free, [:handle], :void
    attach_function :quorumlock_client_node_count, [:handle], :size_t
    # Release and extend by value (locks of other processes, or of the library replaced).
    attach_function :quorumlock_client_release_value, %i[handle pointer pointer size_t pointer size_t pointer pointer],
                    :result, blocking: true
    attach_function :quorumlock_client_extend_value,
                    %i[handle pointer pointer size_t pointer size_t uint64 pointer pointer], :result, blocking: true

    # Errors.
    attach_function :quorumlock_error_free, [:handle], :void
    attach_function :quorumlock_error_code, [:handle], :uint32
    attach_function :quorumlock_error_message, %i[handle pointer size_t pointer], :result
    attach_function :quorumlock_error_attempts, [:handle], :uint32
    attach_function :quorumlock_error_attempt_count, [:handle], :size_t
    attach_function :quorumlock_error_attempt_node_kind, %i[handle size_t size_t pointer], :result
    attach_function :quorumlock_error_lost_reason, [:handle], :uint32
    attach_function :quorumlock_error_node_count, [:handle], :size_t
    attach_function :quorumlock_error_node_kind, %i[handle size_t pointer], :result
    attach_function :quorumlock_error_node_latency_us, %i[handle size_t pointer], :result
    attach_function :quorumlock_error_node_address, %i[handle size_t pointer size_t pointer], :result

    # Lock options.
    attach_function :quorumlock_lock_options_new, [:pointer], :result
    attach_function :quorumlock_lock_options_free, [:handle], :void
    attach_function :quorumlock_lock_options_set_ttl_ms, %i[handle uint64], :result
    attach_function :quorumlock_lock_options_set_retry_count, %i[handle uint32], :result
    attach_function :quorumlock_lock_options_set_retry_delay_ms, %i[handle uint64 uint64], :result
    attach_function :quorumlock_lock_options_set_min_validity_ms, %i[handle uint64], :result
    attach_function :quorumlock_lock_options_set_node_timeout_ms, %i[handle uint64], :result
    attach_function :quorumlock_lock_options_set_auto_extend, %i[handle bool uint64], :result
    attach_function :quorumlock_lock_options_set_limits, %i[handle uint32 uint64], :result
    attach_function :quorumlock_lock_options_set_value, %i[handle pointer size_t pointer], :result
    attach_function :quorumlock_lock_options_set_fenced, %i[handle bool uint64], :result

    # Cancellation.
    attach_function :quorumlock_cancel_new, [:pointer], :result
    attach_function :quorumlock_cancel_trigger, [:handle], :result
    attach_function :quorumlock_cancel_free, [:handle], :void

    # Acquisition and the lock handle.
    attach_function :quorumlock_client_acquire, %i[handle pointer size_t handle handle pointer pointer],
                    :result, blocking: true
    attach_function :quorumlock_client_try_acquire, %i[handle pointer size_t handle pointer pointer],
                    :result, blocking: true
    attach_function :quorumlock_client_acquire_timeout,
                    %i[handle pointer size_t handle uint64 handle pointer pointer], :result, blocking: true
    attach_function :quorumlock_client_acquire_multi,
                    %i[handle pointer pointer size_t handle handle pointer pointer], :result, blocking: true
    attach_function :quorumlock_lock_extend, %i[handle uint64 pointer], :result, blocking: true
    attach_function :quorumlock_lock_release, %i[handle pointer pointer], :result, blocking: true
    attach_function :quorumlock_lock_set_auto_extend, %i[handle bool pointer], :result
    attach_function :quorumlock_lock_remaining_ms, [:handle], :uint64
    attach_function :quorumlock_lock_ttl_ms, [:handle], :uint64
    attach_function :quorumlock_lock_lost_reason, [:handle], :uint32
    attach_function :quorumlock_lock_value, %i[handle pointer size_t pointer], :result
    attach_function :quorumlock_lock_free, [:handle], :void
    attach_function :quorumlock_lock_token, %i[handle pointer], :result
    attach_function :quorumlock_lock_token_count, [:handle], :size_t
    attach_function :quorumlock_lock_token_at, %i[handle size_t pointer], :result

    # Metrics (only the Prometheus text is exposed).
    attach_function :quorumlock_client_metrics, %i[handle pointer], :result
    attach_function :quorumlock_metrics_free, [:handle], :void
    attach_function :quorumlock_metrics_prometheus, %i[handle pointer size_t pointer], :result

    NO_LATENCY = 0xFFFF_FFFF_FFFF_FFFF

    # Reads a snprintf-style string: once for the length, then into a buffer of that
    # length plus one. The block gets (buf, len, out_n) and returns a result code.
    def self.read_string
      n = FFI::MemoryPointer.new(:size_t)
      return "" unless yield(nil, 0, n).zero?

      len = n.read(:size_t)
      buf = FFI::MemoryPointer.new(:char, len + 1)
      return "" unless yield(buf, len + 1, nil).zero?

      buf.read_bytes(len).force_encoding(Encoding::UTF_8)
    end
  end
end
