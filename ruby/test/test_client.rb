# frozen_string_literal: true

require_relative "test_helper"

class TestClient < Minitest::Test
  include QLTest

  def test_lock_returns_lock_info_and_a_second_lock_is_refused
    c = client
    name = unique
    lk = c.lock(name, 5000)
    assert_kind_of Quorumlock::Lock, lk
    assert_equal name, lk[:resource]
    assert_match(/\A[0-9a-f]{40}\z/, lk[:value])
    assert_operator lk[:validity], :>, 4000
    assert_operator lk[:validity], :<=, 5000
    assert_equal %i[validity resource value], lk.to_h.keys
    assert lk.held?
    # The engine wrote the key on every node with the lock's value and a TTL in ms.
    assert_every_node lk.value, "GET", key(name)
    on_all_nodes("PTTL", key(name)).each { |ms| assert_in_delta 5000, ms, 500 }

    assert_equal false, c.lock(name, 5000, retry_count: 0)
    e = assert_raises(Quorumlock::LockBusy) { c.lock!(name, 5000, retry_count: 1, retry_delay: 10) }
    assert_equal "QL_BUSY", e.code
    assert_equal 1, e.code_number
    assert_equal 2, e.attempts
    assert_equal 5, e.nodes.size
    assert(e.nodes.all? { |n| %w[HeldByOther Pending].include?(n.kind) }, e.nodes.map(&:to_s).inspect)
    assert_equal 2, e.attempt_kinds.size
    assert_match(/127\.0\.0\.1:\d+/, e.nodes.first.address)

    assert_equal true, c.unlock(lk)
    assert_equal false, lk.unlock, "a second unlock sends nothing and says it no longer held"
    assert lk.released?
    refute lk.lost?
    assert_equal [0] * 5, on_all_nodes("EXISTS", key(name))
    lk2 = c.lock(name, 5000)
    assert lk2
    lk2.unlock
  end

  def test_block_forms
    c = client
    name = unique
    seen = nil
    # A lock returns at the quorum-th reply; the other nodes' writes may still be in flight.
    assert_equal true, c.lock(name, 5000) { |l| seen = l; assert(eventually { on_all_nodes("EXISTS", key(name)) == [1] * 5 }) }
    assert seen.released?
    assert_equal [0] * 5, on_all_nodes("EXISTS", key(name))

    holder = c.lock(name, 5000)
    assert_equal false, c.lock(name, 5000, try: true) { |l| assert_equal false, l }
    assert_raises(Quorumlock::LockBusy) { c.lock!(name, 5000, try: true) { flunk "ran without the lock" } }
    holder.unlock

    assert_equal 42, c.lock!(name, 5000) { |l| assert l.held?; 42 }
    assert_equal [0] * 5, on_all_nodes("EXISTS", key(name))

    # An exception in the block releases the lock and propagates.
    assert_raises(ZeroDivisionError) { c.lock!(name, 5000) { 1 / 0 } }
    assert_equal [0] * 5, on_all_nodes("EXISTS", key(name))
  end

  def test_lock_bang_block_raises_lock_lost_when_the_keys_vanished
    c = client
    name = unique
    e = assert_raises(Quorumlock::LockLost) do
      c.lock!(name, 5000) { on_all_nodes("DEL", key(name)) }
    end
    assert_equal "QL_LOST", e.code
    assert_equal 5, e.code_number
  end

  def test_extend_lengthens_and_never_recreates_an_expired_lock
    c = client
    name = unique
    lk = c.lock(name, 1000)
    assert_equal true, lk.extend(20_000)
    assert_operator lk.remaining, :>, 15_000
    assert(eventually { on_all_nodes("PTTL", key(name)).all? { |ms| ms > 15_000 } }, "PTTL on every node")
    # redlock-rb's form: lock(res, ttl, extend: lock)
    assert_same lk, c.lock(name, 30_000, extend: lk)
    assert_operator lk[:validity], :>, 25_000
    # Object#extend still works with a module.
    mod = Module.new { def tagged? = true }
    assert lk.extend(mod).tagged?

    # Keys gone on every node: the extension fails and writes nothing.
    on_all_nodes("DEL", key(name))
    assert_equal false, lk.extend(5000)
    assert_kind_of Quorumlock::LockLost, lk.last_extend_error
    assert_equal [0] * 5, on_all_nodes("EXISTS", key(name))
    assert lk.lost?
    assert_equal :expired, lk.lost_reason
    assert_raises(Quorumlock::LockLost) { lk.extend!(5000) }
    assert_equal false, c.lock(name, 5000, extend: lk)

    # A lock whose TTL ran out is not revived either, even though the name is free.
    short = c.lock(unique, 150)
    sleep 0.3
    assert_equal false, short.extend(5000)
    assert_equal [0] * 5, on_all_nodes("EXISTS", key(short.resource))
    assert_equal false, short.unlock
  end

  def test_released_lock_cannot_be_extended
    lk = client.lock(unique, 5000)
    lk.unlock
    assert_invalid("extend after release") { lk.extend(5000) }
  end

  def test_fencing_tokens_increase
    c = client
    name = unique
    a = c.lock(name, 5000, fenced: true)
    assert_kind_of Integer, a.token
    assert_equal a.token, a[:token]
    a.unlock
    b = c.lock(name, 5000, fenced: true)
    assert_operator b.token, :>, a.token
    b.unlock
    plain = c.lock(name, 5000)
    assert_nil plain.token
    assert_equal [], plain.tokens
    plain.unlock
    assert_match(/redis\.call/, Quorumlock.fence_check_script)
  end

  def test_on_lost_fires_once_with_reason_when_keys_are_taken
    c = client
    name = unique
    events = Queue.new
    lk = c.lock(name, 600, auto_extend: true, on_lost: ->(l, err) { events << [l, err] })
    assert lk.auto_extending?
    sleep 0.5
    assert lk.held?, "auto-extension keeps it past its first TTL"
    on_all_nodes("SET", key(name), "someone-else-value", "PX", "5000")
    got, err = Timeout.timeout(5) { events.pop }
    assert_same lk, got
    assert_kind_of Quorumlock::LockLost, err
    assert_equal :taken, err.lost_reason
    assert_equal "QL_LOST", err.code
    assert_match(/another owner/, err.message)
    assert lk.lost?
    sleep 0.2
    assert_equal 0, events.size, "the callback runs once"
    assert_equal false, lk.unlock
    assert_equal ["someone-else-value"] * 5, on_all_nodes("GET", key(name)), "release never deletes another owner's key"
  end

  def test_on_lost_fires_when_an_unextended_lock_expires
    events = Queue.new
    lk = client.lock(unique, 200, on_lost: ->(l, err) { events << err.lost_reason })
    assert_equal :expired, Timeout.timeout(5) { events.pop }
    assert lk.lost?
    # A released lock never reports a loss.
    ok = Queue.new
    lk2 = client.lock(unique, 200, on_lost: ->(_l, _e) { ok << :lost })
    lk2.unlock
    sleep 0.4
    assert_equal 0, ok.size
  end

  def test_several_resources_all_or_nothing
    c = client
    a = unique("a")
    b = unique("b")
    lk = c.lock([a, b], 5000)
    assert_equal [a, b], lk.resource
    assert_every_node 1, "EXISTS", key(a)
    assert_every_node 1, "EXISTS", key(b)
    assert_equal false, c.lock([b, unique("c")], 5000, try: true)
    lk.unlock
    assert_equal [0] * 5, on_all_nodes("EXISTS", key(b))
  end

  def test_try_makes_one_attempt_and_wait_retries_until_released
    c = client
    name = unique
    holder = c.lock(name, 5000)
    e = assert_raises(Quorumlock::LockBusy) { c.lock!(name, 5000, try: true) }
    assert_equal 1, e.attempts

    t0 = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    assert_raises(Quorumlock::LockBusy) { c.lock!(name, 5000, wait: 300, retry_delay: 20) }
    assert_operator Process.clock_gettime(Process::CLOCK_MONOTONIC) - t0, :>=, 0.25

    Thread.new { sleep 0.2; holder.unlock }
    lk = c.lock!(name, 5000, wait: 5000)
    assert lk.held?
    lk.unlock
  end

  def test_interrupting_a_waiting_acquire_cancels_it_and_cleans_up
    c = client
    name = unique
    holder = c.lock(name, 5000)
    started = Queue.new
    waiter = Thread.new do
      started << true
      c.lock!(name, 5000, wait: 20_000, retry_delay: 50)
    end
    waiter.report_on_exception = false
    started.pop
    sleep 0.3
    t0 = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    waiter.raise(Interrupt)
    assert_raises(Interrupt) { waiter.join }
    assert_operator Process.clock_gettime(Process::CLOCK_MONOTONIC) - t0, :<, 2, "the wait was cut short"
    holder.unlock
    # Nothing of the cancelled call is left behind: the name is free at once.
    lk = c.lock(name, 5000, try: true)
    assert lk, "a cancelled acquire left keys behind"
    lk.unlock

    # Timeout.timeout around a waiting lock cancels it the same way.
    holder = c.lock(name, 5000)
    assert_raises(Timeout::Error) { Timeout.timeout(0.3) { c.lock(name, 5000, wait: 20_000) } }
    holder.unlock
    assert (lk = c.lock(name, 5000, try: true))
    lk.unlock
  end

  def test_a_dropped_lock_stays_held_until_its_ttl
    c = client
    name = unique
    c.lock(name, 1500) # not kept
    GC.start
    sleep 0.05
    assert_equal false, c.lock(name, 1500, try: true)
    assert_every_node 1, "EXISTS", key(name)
    assert eventually(3) { on_all_nodes("EXISTS", key(name)) == [0] * 5 }
  end

  def test_the_registry_of_dropped_locks_is_swept
    c = client
    short = Array.new(70) { c.lock!(unique, 300) }
    sleep 0.4
    kept = Array.new(200) { c.lock!(unique, 5000) }
    assert(short.none? { |l| Quorumlock::Held.find(l.value) }, "expired locks were not swept out")
    assert(kept.all? { |l| Quorumlock::Held.find(l.value) }, "held locks were swept out")
    kept.each(&:unlock)
  end

  def test_unlock_takes_a_lock_info_hash_of_this_process
    c = client
    name = unique
    lk = c.lock(name, 5000)
    assert_equal true, c.unlock(lk.to_h)
    assert lk.released?
    assert_equal false, c.unlock({ resource: name, value: "f" * 40 }), "a foreign lock info goes by value"
    assert_invalid("a string") { c.unlock("nope") }
  end

  def test_closed_client_refuses_calls_but_its_locks_live_on
    c = client
    lk = c.lock(unique, 5000)
    c.close
    c.close
    assert c.closed?
    assert_equal 0, c.node_count
    assert_invalid("lock on a closed client") { c.lock(unique, 5000) }
    assert_equal true, lk.extend(5000)
    assert_equal true, lk.unlock
  end

  def test_parent_handles_are_refused_in_a_forked_child
    c = client
    lk = c.lock(unique, 5000)
    rd, wr = IO.pipe
    pid = fork do
      rd.close
      out = []
      [-> { c.lock(unique, 5000) }, -> { lk.extend!(5000) }].each do |f|
        f.call
        out << "ok"
      rescue Quorumlock::Error => e
        out << e.code
      end
      # A client made in the child works.
      child = Quorumlock::Client.new(NODES, quarantine: :off, require_quorum: true, connect_timeout: 5000)
      l = child.lock(unique, 5000)
      out << (l ? l.unlock.to_s : "busy")
      wr.write(out.join(","))
      wr.close
      exit!(0)
    end
    wr.close
    Process.wait(pid)
    assert_equal "QL_INVALID,QL_INVALID,true", rd.read
    assert lk.held?, "the child's calls left the parent's lock alone"
    lk.unlock
  end

  def test_a_fork_child_does_not_report_the_parents_losses
    c = client
    fired = Queue.new
    lk = c.lock(unique, 300, auto_extend: true, on_lost: ->(_l, _e) { fired << Process.pid })
    rd, wr = IO.pipe
    pid = fork do
      rd.close
      child = Quorumlock::Client.new(NODES, quarantine: :off, require_quorum: true, connect_timeout: 5000)
      own = child.lock(unique, 5000, on_lost: ->(_l, _e) {}) # starts the watcher in the child
      sleep 0.7 # past the parent's ttl: its lock never extends in this process
      wr.write(fired.empty? ? "quiet" : "fired")
      own.unlock
      wr.close
      exit!(0)
    end
    wr.close
    Process.wait(pid)
    assert_equal "quiet", rd.read
    assert lk.held?, "auto-extension in the parent went on"
    assert fired.empty?
    lk.unlock
  end

  def test_metrics_and_version
    c = client
    c.lock(unique, 5000).unlock
    text = c.metrics_prometheus
    assert_match(/^quorumlock_acquire_total\{outcome="ok"\} \d+/, text)
    assert_equal Quorumlock::VERSION.split(".").first, Quorumlock.library_version.split(".").first
    assert_equal 5, c.node_count
  end
end
