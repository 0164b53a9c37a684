# frozen_string_literal: true

require_relative "test_helper"

# Key formats, release and extend by value, the lock's TTL and polled loss reasons.
class TestByValue < Minitest::Test
  include QLTest

  def test_key_format_bare_and_braced
    name = unique
    bare = client(key_prefix: "", key_format: :bare)
    lk = bare.lock(name, 5000)
    assert_every_node lk.value, "GET", name
    lk.unlock
    assert_equal [0] * 5, on_all_nodes("EXISTS", name)
    prefixed = client(key_format: "bare").lock(name, 5000)
    assert_every_node prefixed.value, "GET", "quorumlock:#{name}"
    prefixed.unlock
    braced = client(key_format: :braced).lock(name, 5000)
    assert_every_node braced.value, "GET", key(name)
    braced.unlock
    assert_invalid("unknown key_format") { client(key_format: :curly) }
    assert_invalid("key_format nil") { client(key_format: nil) }
  end

  def test_release_by_value_from_another_client
    name = unique
    holder = client.lock(name, 10_000, auto_extend: false)
    other = client
    assert_equal false, other.release_by_value(name, "f" * 40), "another value releases nothing"
    assert_every_node holder.value, "GET", key(name)
    assert_equal true, other.release_by_value(name, holder.value)
    assert_quorum(on_all_nodes("EXISTS", key(name)), "released", &:zero?)
    assert_equal false, other.release_by_value(name, holder.value), "a second release finds nothing"
    # The holder's handle learns it at its next extend.
    assert_equal false, holder.extend(5000)
    assert_equal :expired, holder.lost_reason
  end

  def test_extend_by_value_lengthens_and_never_recreates
    c = client
    name = unique
    holder = c.lock(name, 2000)
    left = client.extend_by_value(name, holder.value, 20_000)
    assert_operator left, :>, 15_000
    assert_operator left, :<=, 20_000
    assert_quorum(on_all_nodes("PTTL", key(name)), "lengthened") { |ms| ms > 15_000 }
    # Another owner's keys are neither extended nor touched.
    e = assert_raises(Quorumlock::LockLost) { client.extend_by_value(name, "e" * 40, 60_000) }
    assert_equal "QL_LOST", e.code
    on_all_nodes("PTTL", key(name)).each { |ms| assert_operator ms, :<=, 20_000 }
    # Keys deleted: nothing re-created.
    on_all_nodes("DEL", key(name))
    assert_raises(Quorumlock::LockLost) { client.extend_by_value(name, holder.value, 5000) }
    assert_equal [0] * 5, on_all_nodes("EXISTS", key(name))
    # Keys expired by their TTL: nothing re-created either.
    short = c.lock(unique, 150)
    assert eventually(5) { on_all_nodes("EXISTS", key(short.resource)) == [0] * 5 }
    assert_raises(Quorumlock::LockLost) { client.extend_by_value(short.resource, short.value, 5000) }
    assert_equal [0] * 5, on_all_nodes("EXISTS", key(short.resource))
  end

  # Lock info Hashes that no Lock of this process holds (JSON-decoded, String keys) go by
  # value through unlock, extend and lock(extend:).
  def test_lock_info_hashes_of_other_processes
    c = client
    name = unique
    holder = c.lock(name, 5000, auto_extend: true)
    info = JSON.parse(JSON.generate(holder.to_h))
    assert_equal true, c.extend(info, 15_000)
    assert_quorum(on_all_nodes("PTTL", key(name)), "lengthened") { |ms| ms > 10_000 }
    ext = c.lock(name, 20_000, extend: { resource: name, value: info["value"] })
    assert_equal({ resource: name, value: holder.value }, ext.slice(:resource, :value))
    assert_operator ext[:validity], :>, 15_000
    assert_invalid("extend: on another resource") { c.lock("#{name}-x", 1000, extend: ext) }
    assert_equal true, c.unlock(info)
    assert_quorum(on_all_nodes("EXISTS", key(name)), "released", &:zero?)
    assert_equal false, c.unlock(info)
    assert_equal false, c.extend(info, 5000), "never re-created"
    assert_equal false, c.lock(name, 5000, extend: info)
    assert_equal [0] * 5, on_all_nodes("EXISTS", key(name))
    assert eventually(5) { holder.lost? }
    assert_equal :expired, holder.lost_reason
  end

  def test_several_resources_by_value
    c = client
    a = unique
    b = unique
    lk = c.lock([a, b], 5000)
    assert_operator client.extend_by_value([a, b], lk.value, 15_000), :>, 10_000
    assert_equal true, client.release_by_value([b, a], lk.value)
    assert_quorum(on_all_nodes("EXISTS", key(a)), "released", &:zero?)
    assert_quorum(on_all_nodes("EXISTS", key(b)), "released", &:zero?)
  end

  def test_by_value_bad_input
    c = client
    name = unique
    assert_invalid("short value") { c.release_by_value(name, "short") }
    assert_invalid("non-printable value") { c.release_by_value(name, "\x01" * 20) }
    assert_invalid("Integer value") { c.release_by_value(name, 12) }
    assert_invalid("no resources") { c.release_by_value([], "f" * 40) }
    assert_invalid("nil resource") { c.extend_by_value(nil, "f" * 40, 1000) }
    assert_invalid("no ttl") { c.extend_by_value(name, "f" * 40) }
    assert_invalid("zero ttl") { c.extend_by_value(name, "f" * 40, 0) }
    assert_invalid("negative ttl") { c.extend_by_value(name, "f" * 40, -1) }
    assert_invalid("a String as lock") { c.unlock("value") }
    assert_invalid("a Hash without value") { c.unlock({ resource: name }) }
    assert_invalid("a Hash without resource") { c.unlock({ value: "f" * 40 }) }
    assert_invalid("extend: an Integer") { c.lock(name, 1000, extend: 5) }
    c.close
    assert_invalid("closed client") { c.release_by_value(name, "f" * 40) }
  end

  def test_lock_ttl_comes_from_the_engine
    lk = client.lock(unique)
    assert_equal 10_000, lk.ttl, "the engine's default TTL"
    lk.unlock
    lk = client(ttl: 7000).lock(unique)
    assert_equal 7000, lk.ttl
    assert_equal true, lk.extend
    assert_operator lk.remaining, :>, 6000
    lk.unlock
  end

  def test_lost_reason_is_polled
    c = client
    lk = c.lock(unique, 150)
    assert_nil lk.lost_reason
    refute lk.lost?
    assert eventually(5) { lk.lost? }
    assert_equal :expired, lk.lost_reason
    assert_equal :expired, lk.lost_error.lost_reason
    # Taken: the extension finds another owner's value.
    name = unique
    taken = c.lock(name, 5000)
    on_all_nodes("SET", key(name), "someone-else-value", "PX", "5000")
    assert_equal false, taken.extend(5000)
    assert_equal :taken, taken.lost_reason
    assert_kind_of Quorumlock::LockLost, taken.lost_error
    assert_equal false, taken.unlock
    assert_nil taken.lost_reason, "none after a release"
  end
end
