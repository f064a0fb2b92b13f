# frozen_string_literal: true

require_relative "test_helper"

# Subjects on events, erasure by subject and of one event, against a real `posthorn
# serve` (started by sdk/test.sh).
class ErasureTest < Minitest::Test
  include ServerTestHelpers

  def test_events_sent_with_a_subject_are_erased_by_it
    # Nothing listens there: attempts fail at once and are dead-lettered within a second.
    hook = client.webhooks.create("http://127.0.0.1:#{TestHelper.free_port}/gone", ["erasure.rb"])
    subject = TestHelper.unique("user:rb")
    sent = client.events.send("erasure.rb", { email: "ana@example.com" }, subjects: [subject, "tenant:7"])
    batch = client.events.send_batch([{ event: "erasure.rb", data: { n: 1 }, subjects: [subject] },
                                      { event: "erasure.rb", data: { n: 2 } }])
    assert_equal [1, 1], batch.map(&:deliveries)
    event = client.events.get(sent.id)
    assert_instance_of Posthorn::Models::Event, event
    assert_equal [{ "email" => "ana@example.com" }, [subject, "tenant:7"]], [event.data, event.subjects]
    assert_equal [nil, nil], [event.erased_at, event.erasure_id]
    assert_equal [subject], client.events.get(batch[0].id).subjects
    assert_equal [], client.events.get(batch[1].id).subjects

    erasure = client.erasures.create(subject)
    assert_instance_of Posthorn::Models::Erasure, erasure
    assert_equal [subject, nil], [erasure.subject, erasure.event_id]
    assert_includes %w[running done], erasure.status
    done = wait_for("the erasure to be done", timeout: 20) do
      client.erasures.get(erasure.id).then { |e| e if e.status == "done" }
    end
    assert_equal [erasure.id, 2], [done.id, done.events]
    refute_nil done.finished_at
    [sent.id, batch[0].id].each do |event_id|
      erased = client.events.get(event_id)
      assert_equal [nil, [], erasure.id], [erased.data, erased.subjects, erased.erasure_id]
      refute_nil erased.erased_at
    end
    kept = client.events.get(batch[1].id)
    assert_equal [{ "n" => 2 }, nil], [kept.data, kept.erased_at]

    # An erased event has nothing left to send again.
    attempt = client.deliveries.list(event_id: sent.id).data.first
    assert_api_error(409, "conflict") { client.deliveries.retry(attempt.id) }

    # One event by id: erased within the call; erasing it again answers the same.
    assert_nil client.events.erase_data(batch[1].id)
    gone = client.events.get(batch[1].id)
    assert_nil gone.data
    refute_includes [nil, erasure.id], gone.erasure_id
    assert_nil client.events.erase_data(batch[1].id)
  ensure
    client.webhooks.delete(hook.id) if hook
  end

  def test_a_batch_keeps_its_idempotency_keys
    items = [{ event: "erasure.rb_batch", data: { n: 1 }, id: TestHelper.unique("rb-batch"), subjects: ["user:1"] }]
    first = client.events.send_batch(items)
    assert_equal first, client.events.send_batch(items)
  end

  def test_unknown_erasures_and_events_and_refused_subjects
    assert_api_error(404, "not_found") { client.erasures.get(10**12) }
    assert_api_error(404, "not_found") { client.events.erase_data("evt_unknown") }
    assert_api_error(422, "invalid") { client.erasures.create("") }
    assert_api_error(422, "invalid") { client.events.send("erasure.rb", {}, subjects: [""]) }
    assert_api_error(422, "invalid") { client.events.send("erasure.rb", {}, subjects: Array.new(11) { |n| "user:#{n}" }) }
  end
end
