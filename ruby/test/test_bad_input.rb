# frozen_string_literal: true

require_relative "test_helper"

# Bad input gets Quorumlock::InvalidArgument (code "QL_INVALID", 7) and never crashes the
# process; unreachable nodes get the engine's codes with a per-node report.
class TestBadInput < Minitest::Test
  include QLTest

  def test_bad_resources
    c = client
    cases = {
      "nil" => nil, "an Integer" => 42, "an Object" => Object.new, "an empty name" => "",
      "a 2000-byte name" => "n" * 2000, "invalid UTF-8" => (+"rb:\xff\xfe").force_encoding(Encoding::UTF_8),
      "an empty Array" => [], "an Array with nil" => ["a", nil]
    }
    cases.each do |what, name|
      assert_invalid(what) { c.lock(name, 1000) }
      assert_invalid(what) { c.lock!(name, 1000, try: true) }
    end
    # Binary strings carry any bytes, and other encodings are sent as UTF-8.
    lk = c.lock(+"rb:\xff\xfe#{unique}".b, 1000)
    assert lk
    lk.unlock
    latin = "rb:caf\u00e9:#{unique}".encode(Encoding::ISO_8859_1)
    lk = c.lock(latin, 1000)
    assert_every_node 1, "EXISTS", key(latin.encode(Encoding::UTF_8))
    lk.unlock
    lk = c.lock(:"rb_symbol_#{rand(1 << 30)}", 1000)
    assert lk
    lk.unlock
  end

  def test_bad_ttls_and_options
    c = client
    name = unique
    {
      "zero" => 0, "negative" => -1, "a String" => "1000", "a Float" => 1.5, "above max_ttl" => 3_600_000,
      "above 2^64" => 2**64, "true" => true
    }.each do |what, ttl|
      assert_invalid("ttl #{what}") { c.lock(name, ttl) }
    end
    {
      "unknown option" => { bogus: 1 }, "retry_count String" => { retry_count: "3" },
      "retry_count above u32" => { retry_count: 2**33 }, "negative retry_delay" => { retry_delay: -5 },
      "short value" => { value: "short" }, "value not printable" => { value: "\x01" * 20 },
      "fenced String" => { fenced: "yes" }, "on_lost not callable" => { on_lost: 5 },
      "wait and try" => { wait: 100, try: true }, "negative wait" => { wait: -1 },
      "auto_extend nil" => { auto_extend: nil }, "node_timeout Float" => { node_timeout: 0.5 }
    }.each do |what, opts|
      assert_invalid(what) { c.lock(name, 1000, **opts) }
    end
    assert_equal [0] * 5, on_all_nodes("EXISTS", key(name)), "nothing was sent"
  end

  def test_bad_client_settings
    {
      "nil urls" => [nil, {}], "empty urls" => [[], {}], "a String" => ["redis://127.0.0.1:1", {}],
      "nil url" => [[nil], {}], "not a URL" => [["not a url"], {}], "wrong scheme" => [["http://127.0.0.1:1"], {}],
      "invalid UTF-8 URL" => [[(+"redis://127.0.0.1:\xff").force_encoding(Encoding::UTF_8)], {}],
      "unknown setting" => [NODES, { bogus: true }], "quarantine mode" => [NODES, { quarantine: :maybe }],
      "eviction mode" => [NODES, { eviction_check: 3 }], "drift 0.9" => [NODES, { drift_factor: 0.9 }],
      "drift String" => [NODES, { drift_factor: "0.1" }], "negative timeout" => [NODES, { connect_timeout: -1 }],
      "require_quorum 1" => [NODES, { require_quorum: 1 }], "bad default ttl" => [NODES, { ttl: "x" }],
      "key_prefix nil" => [NODES, { key_prefix: nil }]
    }.each do |what, (urls, settings)|
      assert_invalid(what) { Quorumlock::Client.new(urls, quarantine: :off, **settings) }
    end
  end

  def test_unreachable_nodes_fail_with_per_node_detail
    dead = ["redis://127.0.0.1:1", "redis://127.0.0.1:2", "redis://127.0.0.1:3"]
    c = Quorumlock::Client.new(dead, quarantine: :off, connect_timeout: 200)
    e = assert_raises(Quorumlock::QuorumNotReached) { c.lock!(unique, 1000, try: true) }
    assert_equal "QL_QUORUM", e.code
    assert_equal 2, e.code_number
    assert_equal 3, e.nodes.size
    e.nodes.each do |n|
      assert_includes %w[ConnectionRefused NotConnected], n.kind
      assert_match(/\A127\.0\.0\.1:[123]/, n.address)
    end
    assert_raises(Quorumlock::QuorumNotReached) { c.lock(unique, 1000, try: true) }
    c.close

    e = assert_raises(Quorumlock::ConnectionFailed) do
      Quorumlock::Client.new(dead, quarantine: :off, connect_timeout: 200, require_quorum: true)
    end
    assert_equal "QL_CONNECTION", e.code
    assert_equal 8, e.code_number
    assert_equal 3, e.nodes.size

    # A majority of live nodes is enough: two dead ones out of five.
    mixed = NODES.first(3) + dead.first(2)
    c = Quorumlock::Client.new(mixed, quarantine: :off, connect_timeout: 1000, node_timeout: 1000)
    lk = c.lock(unique, 2000)
    assert lk
    lk.unlock
    c.close
  end

  def test_quarantine_on_refuses_fresh_plain_nodes
    c = Quorumlock::Client.new(NODES, node_timeout: 1000, connect_timeout: 5000)
    e = assert_raises(Quorumlock::QuorumNotReached) { c.lock!(unique, 1000, try: true) }
    assert(e.nodes.all? { |n| n.kind == "Quarantined" }, e.nodes.map(&:to_s).inspect)
    assert_match(/quarantine/, e.message)
    c.close
  end

  # Random mixes of good and bad values: every call either works or raises a
  # Quorumlock::Error, whatever the types.
  def test_random_inputs_only_raise_quorumlock_errors
    c = client
    rng = Random.new(Integer(ENV.fetch("QL_SEED", rand(1 << 30))))
    names = [nil, "", unique, (+"\xff").force_encoding(Encoding::UTF_8), (+"\xff#{unique}").b, 0, -1, 2**64, 1.5,
             :"s#{unique}", [], [unique], [unique, unique], {}, Object.new, true, "n" * 2000]
    ttls = [nil, 0, -1, 1, 3, 500, 60_001, 2**64, 1.5, "x", true, [], Float::NAN]
    opts = [{}, { retry_count: 0 }, { retry_count: -1 }, { retry_count: "x" }, { wait: 50 }, { wait: -1 },
            { try: true }, { try: 1 }, { fenced: true }, { value: "v" * 20 }, { value: 5 }, { node_timeout: 0 },
            { min_validity: 2**64 }, { auto_extend: true }, { max_hold: 1 }, { bogus: 1 }, { on_lost: 1 }]
    outcomes = Hash.new(0)
    # Every 25th call is a valid one, so that a run always locks: valid mixes of name, ttl and
    # options are rare, and a clean-clone CI run drew 300 calls without one (298 QL_INVALID,
    # 2 false).
    300.times do |i|
      name = names.sample(random: rng)
      ttl = ttls.sample(random: rng)
      o = opts.sample(random: rng)
      name, ttl, o = unique, 500, {} if (i % 25).zero?
      begin
        lk = c.lock(name, ttl, **o)
        outcomes[lk ? :locked : :false] += 1
        lk.unlock if lk
      rescue Quorumlock::Error => e
        outcomes[e.code] += 1
      end
    end
    assert_operator outcomes["QL_INVALID"], :>, 0
    assert_operator outcomes[:locked], :>, 0, outcomes.inspect
  end

  def test_every_code_matches_the_c_abi
    Quorumlock::CODES.each do |number, name|
      assert_equal name, Quorumlock::Native.quorumlock_result_name(number)
      next if number.zero?

      klass = Quorumlock::ERROR_CLASSES.fetch(number)
      assert_operator klass, :<, Quorumlock::Error
      err = klass.new("x", code_number: number)
      assert_equal name, err.code
    end
    assert_equal "QL_UNKNOWN", Quorumlock::Native.quorumlock_result_name(13)
    assert_equal Quorumlock::ERROR_CLASSES.values.uniq.size, Quorumlock::ERROR_CLASSES.size
  end
end
