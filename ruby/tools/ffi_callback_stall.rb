# Why the gem polls instead of using the C lost callback (not part of make test-ruby).
# Run: make harness; QUORUMLOCK_LIB=<prefix>/lib target/debug/ql-harness exec --nodes 3 --persist none -- \
#   ruby -Iruby/lib ruby/tools/ffi_callback_stall.rb gvl [nocb]
# Does a ruby-ffi lost callback (run from an engine thread) stall the engine while a Ruby
# thread holds the GVL? Locks A and B get FFI callbacks; C is auto-extended (ttl 600 ms).
require "quorumlock"
N = Quorumlock::Native
module CB
  extend FFI::Library
  callback :lost_cb, [:pointer, :uint32, :pointer], :void
end
N.attach_function :quorumlock_lock_options_set_on_lost, [:pointer, CB.find_type(:lost_cb), :pointer], :uint32
urls = ENV["QL_NODES"].split(",")
c = Quorumlock::Client.new(urls, quarantine: :off)
cptr = c.instance_variable_get(:@ptr)
t0 = Process.clock_gettime(Process::CLOCK_MONOTONIC)
now = -> { ((Process.clock_gettime(Process::CLOCK_MONOTONIC) - t0) * 1000).round }
ran = []
CBF = FFI::Function.new(:void, [:pointer, :uint32, :pointer]) { |_, reason, _| ran << [now.call, reason] }
def acquire(cptr, name, ttl, cb)
  o = FFI::MemoryPointer.new(:pointer); Quorumlock::Native.quorumlock_lock_options_new(o); opts = o.read_pointer
  Quorumlock::Native.quorumlock_lock_options_set_ttl_ms(opts, ttl)
  Quorumlock::Native.quorumlock_lock_options_set_auto_extend(opts, true, 0)
  Quorumlock::Native.quorumlock_lock_options_set_on_lost(opts, cb, nil) if cb
  out = FFI::MemoryPointer.new(:pointer)
  rc = Quorumlock::Native.quorumlock_client_acquire(cptr, name, name.bytesize, opts, nil, out, nil)
  raise "acquire #{rc}" unless rc.zero?
  out.read_pointer
end
cbf = ARGV[1] == "nocb" ? nil : CBF
a = acquire(cptr, "A", 600, cbf); b = acquire(cptr, "B", 600, cbf); cl = acquire(cptr, "C", 600, nil)
urls.each { |u| port = u.split(":").last; system("redis-cli", "-p", port, "DEL", "quorumlock:{A}", "quorumlock:{B}", out: File::NULL) }
mode = ARGV[0]
if mode == "gvl"
  # Hold the GVL for ~2 s in C code that never releases it (a regexp backtracking).
  s = Process.clock_gettime(Process::CLOCK_MONOTONIC)
  module LibC; extend FFI::Library; ffi_lib FFI::Library::LIBC; attach_function :usleep, [:uint], :int; end
  LibC.usleep(2_000_000) # a C call that keeps the GVL (a C extension at work, a non-blocking FFI call)
  puts "GVL held for #{((Process.clock_gettime(Process::CLOCK_MONOTONIC) - s) * 1000).round} ms"
else
  sleep 2
end
sleep 0.3
puts "callbacks ran at (ms, reason): #{ran.inspect}"
puts "C remaining after: #{N.quorumlock_lock_remaining_ms(cl)} ms (0 = C was lost too)"
