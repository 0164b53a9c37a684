# frozen_string_literal: true

require_relative "test_helper"
require "quorumlock/redlock"

# The redlock-rb 2.x drop-in: its API shapes and results, against real nodes.
class TestRedlock < Minitest::Test
  include QLTest

  Redlock = Quorumlock::Redlock

  def manager(servers = NODES, options = {})
    Redlock::Client.new(servers, { redis_timeout: 1, connect_timeout: 5000 }.merge(options))
  end

  def teardown
    Redlock::Client.testing_mode = nil
    super
  end

  def test_lock_returns_a_lock_info_hash_or_false
    lm = manager
    res = unique
    info = lm.lock(res, 2000)
    # The call returned at the quorum-th reply: the other nodes' writes may still be in flight.
    assert eventually { on_all_nodes("PTTL", res).all? { |ms| ms.between?(1700, 2000) } },
           on_all_nodes("PTTL", res).inspect
    assert_instance_of Hash, info
    assert_equal %i[validity resource value], info.keys
    assert_equal res, info[:resource]
    assert_operator info[:validity], :>, 1500
    assert_equal false, lm.lock(res, 2000, retry_count: 0)
    assert lm.valid_lock?(info)
    assert_operator lm.get_remaining_ttl_for_lock(info), :>, 1000
    assert_nil lm.unlock(info)
    refute lm.valid_lock?(info)
    assert_nil lm.get_remaining_ttl_for_lock(info)
    assert (again = lm.lock(res, 2000))
    lm.unlock(again)
    # unlock of something unknown is a best-effort no-op, as in redlock-rb; a value the engine
    # never gives is refused.
    assert_nil lm.unlock({ resource: res, value: "f" * 40 })
    assert_nil lm.unlock(false)
    assert_invalid("a 1-character value") { lm.unlock({ resource: res, value: "x" }) }
  end

  # Keys are the bare resource names, as redlock-rb's: a lock taken by either library
  # excludes the other during a migration.
  def test_keys_are_the_bare_resource_name
    lm = manager
    res = unique
    info = lm.lock(res, 5000)
    assert_equal [info[:value]] * 5, on_all_nodes("GET", res)
    assert_equal [0] * 5, on_all_nodes("EXISTS", key(res))
    lm.unlock(info)
    # A redlock-rb holder (its SET NX PX with a UUID) keeps the drop-in out, and the drop-in
    # releases and extends it by its lock info.
    uuid = "6f1c1a0e-3b5d-4c1e-9f7a-2d8e4b6a9c01"
    on_all_nodes("SET", res, uuid, "NX", "PX", "3000")
    assert_equal false, lm.lock(res, 2000, retry_count: 0)
    theirs = { validity: 2900, resource: res, value: uuid }
    ext = lm.lock(res, 20_000, extend: theirs)
    assert_equal({ resource: res, value: uuid }, ext.slice(:resource, :value))
    assert_operator ext[:validity], :>, 15_000
    assert_quorum(on_all_nodes("PTTL", res), "lengthened") { |ms| ms > 15_000 }
    assert_nil lm.unlock(theirs)
    assert_quorum(on_all_nodes("EXISTS", res), "released", &:zero?)
    assert_nil lm.get_remaining_ttl_for_lock(theirs), "another process's lock cannot be read"
    # key_format: / key_prefix: override the defaults.
    braced = manager(NODES, key_format: :braced, key_prefix: "quorumlock:")
    info = braced.lock(res, 2000)
    assert_equal [1] * 5, on_all_nodes("EXISTS", key(res))
    braced.unlock(info)
  end

  # A lock info taken in another process (a child ruby holding it) is extended and released
  # here by value; the holder's own handle then finds its keys gone.
  def test_unlock_and_extend_a_lock_info_of_another_process
    res = unique
    script = <<~RUBY
      require "json"
      require "quorumlock/redlock"
      lm = Quorumlock::Redlock::Client.new(ENV["QL_NODES"].split(","), redis_timeout: 1, connect_timeout: 5000)
      info = lm.lock(ARGV[0], 10_000) or abort "not acquired"
      $stdout.puts JSON.generate(info)
      $stdout.flush
      $stdin.gets
      $stdout.puts JSON.generate(extended: lm.lock(ARGV[0], 10_000, extend: info), valid: lm.valid_lock?(info))
    RUBY
    lib = File.expand_path("../lib", __dir__)
    env = { "QL_NODES" => NODES.join(",") }
    IO.popen(env, [RbConfig.ruby, "-I", lib, "-e", script, res], "r+") do |child|
      theirs = JSON.parse(child.gets, symbolize_names: true)
      lm = manager
      assert_equal [theirs[:value]] * 5, on_all_nodes("GET", res)
      assert_equal false, lm.lock(res, 2000, retry_count: 0), "held by the other process"
      ext = lm.lock(res, 30_000, extend: theirs)
      assert_equal theirs[:value], ext[:value]
      assert_quorum(on_all_nodes("PTTL", res), "lengthened") { |ms| ms > 25_000 }
      assert_nil lm.unlock(theirs)
      assert_quorum(on_all_nodes("EXISTS", res), "released", &:zero?)
      # Gone now: extending by value never re-creates it.
      assert_equal false, lm.lock(res, 5000, extend: theirs)
      assert_quorum(on_all_nodes("EXISTS", res), "nothing re-created", &:zero?)
      child.puts "go"
      assert_equal({ extended: false, valid: false }, JSON.parse(child.gets, symbolize_names: true))
    end
    assert_predicate $?, :success?
  end

  def test_block_form_and_lock_bang
    lm = manager
    res = unique
    assert_equal true, lm.lock(res, 2000) { |info| assert info[:value] }
    assert_equal [0] * 5, on_all_nodes("EXISTS", res)
    held = lm.lock(res, 2000)
    assert_equal false, lm.lock(res, 2000, retry_count: 0) { |info| assert_equal false, info }
    e = assert_raises(Redlock::LockError) { lm.lock!(res, 2000, retry_count: 0) { flunk "ran" } }
    assert_equal "failed to acquire lock on '#{res}'", e.message
    assert_equal "QL_BUSY", e.code
    lm.unlock(held)
    assert_equal :done, lm.lock!(res, 2000) { :done }
    assert_raises(RuntimeError) { lm.lock!(res, 2000) }
  end

  def test_extend_keeps_the_value_and_never_recreates
    lm = manager
    res = unique
    info = lm.lock(res, 1000)
    ext = lm.lock(res, 20_000, extend: info)
    assert_equal info[:value], ext[:value]
    assert_operator ext[:validity], :>, 15_000
    assert_quorum(on_all_nodes("PTTL", res), "lengthened") { |ms| ms > 15_000 }
    # redlock-rb re-creates an expired lock here unless extend_only_if_locked is set;
    # quorumlock never does.
    on_all_nodes("DEL", res)
    assert_equal false, lm.lock(res, 5000, extend: info)
    assert_equal false, lm.lock(res, 5000, extend: info, extend_only_if_locked: true)
    assert_equal [0] * 5, on_all_nodes("EXISTS", res)
    assert_equal false, lm.lock(res, 5000, extend: { resource: res, value: "f" * 40 })
  end

  def test_quorum_with_unreachable_nodes
    dead = "redis://127.0.0.1:46864"
    assert manager([NODES[0], NODES[1], dead]).lock(unique, 2000)
    e = assert_raises(Redlock::LockAcquisitionError) do
      manager([NODES[0], dead, "redis://127.0.0.1:46865"]).lock(unique, 2000)
    end
    assert_equal 2, e.errors.size
    assert_kind_of Redlock::LockError, e
    assert_equal "QL_QUORUM", e.code
    assert_match(/\Afailed to acquire lock on 'Too many Redis errors prevented lock acquisition:\n/, e.message)
    assert(e.errors.all? { |x| x.node.address.start_with?("127.0.0.1:4686") })
  end

  def test_servers_as_hashes_and_client_objects
    host, port = NODES[0].sub("redis://", "").split(":")
    config = Struct.new(:host, :port, :db, :username, :password, :ssl)
    rc = Struct.new(:config).new(config.new(host, port.to_i, 0, nil, nil, false))
    rb = Struct.new(:connection).new({ host: host, port: NODES[1].split(":").last.to_i, db: 0 })
    pool = Object.new
    pool.define_singleton_method(:with) { |&blk| blk.call(NODES[4]) }
    lm = manager([{ url: NODES[2] }, { host: host, port: NODES[3].split(":").last.to_i }, rc, rb, pool])
    res = unique
    assert (info = lm.lock(res, 2000))
    assert_equal [1] * 5, on_all_nodes("EXISTS", res)
    lm.unlock(info)
    assert_equal "redis://u:p%40ss@h:1/2", Redlock::Client.url_of({ host: "h", port: 1, db: 2, username: "u", password: "p@ss" })
    assert_invalid("sentinels") { manager([{ sentinels: [], name: "m" }]) }
    assert_invalid("an Integer server") { manager([5]) }
  end

  def test_bad_input
    lm = manager
    assert_invalid("nil resource") { lm.lock(nil, 1000) }
    assert_invalid("String ttl") { lm.lock(unique, "1000") }
    assert_invalid("negative ttl") { lm.lock(unique, -1) }
    assert_invalid("callable retry_delay") { lm.lock(unique, 1000, retry_delay: ->(n) { n }) }
    assert_invalid("servers not an Array") { Redlock::Client.new("redis://x:1") }
  end

  def test_testing_modes
    Redlock::Client.testing_mode = :bypass
    lm = manager
    info = lm.lock(unique, 1000)
    assert_equal 1000, info[:validity]
    assert_equal info[:value], lm.lock(info[:resource], 1000, extend: info)[:value]
    assert_equal [0] * 5, on_all_nodes("EXISTS", info[:resource])
    Redlock::Client.testing_mode = :fail
    assert_equal false, lm.lock(unique, 1000)
  end

  def test_fenced_lock_info_has_a_token
    lm = manager(NODES, fenced: true)
    res = unique
    a = lm.lock(res, 2000)
    lm.unlock(a)
    b = lm.lock(res, 2000)
    assert_operator b[:token], :>, a[:token]
    lm.unlock(b)
  end

  def test_no_restart_quarantine_by_default_and_inspection_is_not_available
    assert_raises(NotImplementedError) { manager.locked?(unique) }
    assert_raises(NotImplementedError) { manager.get_remaining_ttl_for_resource(unique) }
    lm = manager(NODES, quarantine: :on)
    e = assert_raises(Quorumlock::QuorumNotReached) { lm.client.lock!(unique, 1000, try: true) }
    assert(e.nodes.all? { |n| n.kind == "Quarantined" })
  end
end
