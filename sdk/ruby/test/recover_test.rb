# frozen_string_literal: true

require_relative "test_helper"

# Recovering an endpoint's failures and following the replay, against a real `posthorn
# serve` (started by sdk/test.sh with a retry schedule of 200 ms steps).
class RecoverTest < Minitest::Test
  include ServerTestHelpers

  # A receiver answering @status to every delivery and noting [status, event id].
  def setup
    @status = 500
    @seen = Queue.new
    @receiver = HttpReceiver.new do |_method, _path, _headers, body|
      @seen << [@status, JSON.parse(body)["event_id"]]
      [@status, {}, ""]
    end
  end

  def teardown
    @receiver.stop
  end

  def seen(status)
    Array.new(@seen.size) { @seen.pop }.tap { |all| all.each { |pair| @seen << pair } }
                                      .select { |s, _| s == status }.map(&:last)
  end

  def test_recover_replays_the_dead_letters_once_and_the_replay_can_be_followed
    hook = client.webhooks.create(@receiver.url("/hook"), ["recover.rb"])
    sent = Array.new(2) { |n| client.events.send("recover.rb", { n: n }).id }
    # Every automatic attempt fails until the schedule is spent: dead letters.
    sent.each do |event_id|
      wait_for("#{event_id} to be dead-lettered", timeout: 60) do
        client.deliveries.list(event_id: event_id).data.any? { |d| d.status == "dead_letter" }
      end
    end
    assert_equal sent.sort, seen(500).uniq.sort

    @status = 200
    since = Time.now - 300
    replay = client.webhooks.recover(hook.id, since: since)
    assert_instance_of Posthorn::Models::Replay, replay
    assert_equal 2, replay.total
    assert_includes %w[running done], replay.status
    assert_operator replay.per_second, :>, 0
    done = wait_for("the replay to finish") do
      client.replays.get(replay.id).then { |r| r if r.status == "done" && r.finished == r.total }
    end
    assert_equal [replay.id, 2, 2, 2], [done.id, done.total, done.queued, done.finished]
    wait_for("the receiver to get both again") { seen(200).sort == sent.sort }

    # Nothing fails any more: an empty replay (times as text this time), done at once.
    now = Time.now
    empty = client.webhooks.recover(hook.id, since: since.utc.iso8601, until: (now + 60).utc.iso8601)
    assert_equal [0, 0], [empty.total, empty.queued]
    refute_equal replay.id, empty.id
    wait_for("the empty replay to be done") { client.replays.get(empty.id).status == "done" }
    cancelled = client.replays.cancel(empty.id)
    assert_equal empty.id, cancelled.id
    assert_includes %w[done cancelled], cancelled.status
    assert_equal done, client.replays.cancel(replay.id) # a finished replay is left as it was

    # A window that ends before it starts is empty; errors: unknown replay or endpoint.
    assert_equal [0, "done"], client.webhooks.recover(hook.id, since: now, until: now - 3600).then { |r| [r.total, r.status] }
    assert_api_error(404, "not_found") { client.replays.get(10**12) }
    assert_api_error(404, "not_found") { client.replays.cancel(10**12) }
    assert_api_error(404, "not_found") { client.webhooks.recover(10**12, since: since) }
    assert_api_error(422, "invalid") { client.webhooks.recover(hook.id, since: "yesterday") }
  ensure
    client.webhooks.delete(hook.id) if hook
  end
end
