# frozen_string_literal: true

# Shared set-up: real redis-server nodes from ql-harness. Under `ql-harness exec` (make
# test-ruby) QL_NODES names them; otherwise this starts 5 nodes itself and stops them at exit.
# The nodes have no durable writes, so clients turn the restart quarantine off.
$LOAD_PATH.unshift File.expand_path("../lib", __dir__)
require "json"
require "socket"
require "timeout"
require "minitest/autorun"
require "quorumlock"

module QLTest
  REPO = File.expand_path("../..", __dir__)

  def self.harness
    ENV["QL_HARNESS"] || File.join(REPO, "target/debug/ql-harness")
  end

  def self.start_nodes
    out = IO.popen([harness, "start", "--nodes", "5", "--persist", "none", "--parent", Process.pid.to_s], &:read)
    raise "ql-harness start failed (build it with `make harness`)" unless $?.success?

    info = JSON.parse(out.lines.last)
    run_dir = info["run_dir"]
    main = Process.pid
    Minitest.after_run { system(harness, "stop", run_dir, out: File::NULL, err: File::NULL) if Process.pid == main }
    info["nodes"].map { |n| n["url"] }
  end

  NODES = (ENV["QL_NODES"] && !ENV["QL_NODES"].empty? ? ENV["QL_NODES"].split(",") : start_nodes).freeze

  # A client on the test nodes; node requests get 1 s so a loaded machine does not turn an
  # expected outcome into a timeout.
  def client(**settings)
    c = Quorumlock::Client.new(NODES, quarantine: :off, require_quorum: true, connect_timeout: 5000,
                                      node_timeout: 1000, **settings)
    (@clients ||= []) << c
    c
  end

  def teardown
    (@clients || []).each(&:close)
    super
  end

  # A lock name no other test uses.
  def unique(tag = name)
    "rb:#{tag}:#{Process.pid}:#{rand(1 << 40)}"
  end

  # The Redis key of a lock name under the default prefix.
  def key(name)
    "quorumlock:{#{name}}"
  end

  # Sends one RESP command to node i and returns the parsed reply.
  def redis(i, *args)
    host, port = NODES[i].sub(%r{\Aredis://}, "").split(":")
    TCPSocket.open(host, port.to_i) do |s|
      s.write("*#{args.size}\r\n" + args.map { |a| "$#{a.to_s.bytesize}\r\n#{a}\r\n" }.join)
      read_reply(s)
    end
  end

  def on_all_nodes(*args)
    NODES.each_index.map { |i| redis(i, *args) }
  end

  # Every node comes to answer `expected` to the command: a call returns at the quorum-th
  # reply, so the other nodes' writes may still be in flight.
  def assert_every_node(expected, *args)
    ok = eventually { on_all_nodes(*args).all? { |r| r == expected } }
    assert ok, "#{args.inspect} on every node: #{on_all_nodes(*args).inspect}"
  end

  # At least a quorum of the replies satisfy the block: a node slower than the node timeout
  # (a loaded machine) can miss a write that the engine decided at the quorum.
  def assert_quorum(replies, what = nil, &cond)
    assert_operator replies.count(&cond), :>=, (replies.size / 2) + 1, "#{what}: #{replies.inspect}"
  end

  def read_reply(s)
    line = s.gets("\r\n").chomp("\r\n")
    case line[0]
    when "+" then line[1..]
    when "-" then raise "redis error: #{line}"
    when ":" then line[1..].to_i
    when "$"
      n = line[1..].to_i
      n.negative? ? nil : s.read(n + 2)[0, n]
    when "*" then Array.new(line[1..].to_i) { read_reply(s) }
    end
  end

  # Waits up to `secs` for the block to be true.
  def eventually(secs = 5)
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + secs
    until yield
      return false if Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline

      sleep 0.01
    end
    true
  end

  def assert_invalid(what)
    e = assert_raises(Quorumlock::InvalidArgument, what) { yield }
    assert_equal "QL_INVALID", e.code, what
    assert_equal 7, e.code_number, what
    e
  end
end
