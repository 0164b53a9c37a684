# frozen_string_literal: true

require_relative "test_helper"
require "tmpdir"

# Contention with an overlap check: holders mark a critical section, and no two may be in it
# at once. Each checker also runs once without the lock and must then see overlaps, so it is
# shown able to fail.
class TestContention < Minitest::Test
  include QLTest

  LOCK_OPTS = { wait: 20_000, retry_delay: 5, retry_jitter: 5 }.freeze

  # Threads of one process: half share a client, half have their own.
  def run_threads(name, workers:, rounds:, locked:)
    shared = client
    inside = 0
    violations = 0
    entries = 0
    m = Mutex.new
    threads = Array.new(workers) do |w|
      c = w.even? ? shared : client
      Thread.new do
        rounds.times do
          lk = locked ? c.lock!(name, 5000, **LOCK_OPTS) : nil
          m.synchronize do
            inside += 1
            entries += 1
            violations += 1 if inside > 1 || (lk && !lk.held?)
          end
          sleep 0.002
          m.synchronize { inside -= 1 }
          lk&.unlock
        end
      end
    end
    threads.each(&:join)
    [entries, violations]
  end

  def test_threads_never_overlap
    entries, violations = run_threads(unique, workers: 8, rounds: 8, locked: true)
    assert_equal 64, entries
    assert_equal 0, violations
  end

  def test_thread_checker_sees_overlaps_without_the_lock
    _, violations = run_threads(unique, workers: 8, rounds: 4, locked: false)
    assert_operator violations, :>, 0, "the checker never fired: it proves nothing"
  end

  # Processes: each holder creates a marker file with O_EXCL on entry (EEXIST means another
  # holder is inside) and removes it on exit.
  def run_processes(name, workers:, rounds:, locked:)
    Dir.mktmpdir("ql-rb-contention") do |dir|
      marker = File.join(dir, "inside")
      pids = Array.new(workers) do |w|
        fork do
          c = Quorumlock::Client.new(NODES, quarantine: :off, require_quorum: true, connect_timeout: 5000,
                                            node_timeout: 1000)
          overlaps = 0
          rounds.times do
            lk = locked ? c.lock!(name, 5000, **LOCK_OPTS) : nil
            begin
              File.open(marker, File::WRONLY | File::CREAT | File::EXCL) { |f| f.write(Process.pid.to_s) }
              mine = true
            rescue Errno::EEXIST
              overlaps += 1
              mine = false
            end
            overlaps += 1 if lk && !lk.held?
            sleep 0.003
            File.delete(marker) if mine
            lk&.unlock
          end
          File.write(File.join(dir, "w#{w}"), "#{rounds} #{overlaps}")
          exit!(0)
        rescue StandardError => e
          File.write(File.join(dir, "w#{w}"), "error #{e.class}: #{e.message}")
          exit!(1)
        end
      end
      statuses = pids.map { |pid| Process.wait2(pid)[1] }
      assert statuses.all?(&:success?), Dir.glob(File.join(dir, "w*")).map { |f| File.read(f) }.inspect
      results = Array.new(workers) { |w| File.read(File.join(dir, "w#{w}")).split.map(&:to_i) }
      [results.sum(&:first), results.sum(&:last)]
    end
  end

  def test_processes_never_overlap
    entries, overlaps = run_processes(unique, workers: 4, rounds: 6, locked: true)
    assert_equal 24, entries
    assert_equal 0, overlaps
  end

  def test_process_checker_sees_overlaps_without_the_lock
    _, overlaps = run_processes(unique, workers: 4, rounds: 4, locked: false)
    assert_operator overlaps, :>, 0, "the checker never fired: it proves nothing"
  end
end
