# frozen_string_literal: true

require_relative "test_helper"

# Two projects' keys see nothing of each other: every id of one is a 404 for the other.
class IsolationTest < Minitest::Test
  include ServerTestHelpers

  def test_another_projects_ids_are_not_found
    hook = client.webhooks.create("https://example.com/isolation-rb", ["isolation.rb"])
    sent = client.events.send("isolation.rb", { n: 1 })
    attempt = wait_for("the attempt") { client.deliveries.list(event_id: sent.id).data.first }
    replay = client.webhooks.recover(hook.id, since: Time.now - 60)
    erasure = client.erasures.create(TestHelper.unique("user:rb-isolation"))
    project = operator.projects.create("Ruby isolation, other project")
    other = client(operator.api_keys.create(project.id, "other").key)

    [-> { other.webhooks.get(hook.id) }, -> { other.webhooks.update(hook.id, description: "mine") },
     -> { other.webhooks.rotate_secret(hook.id) }, -> { other.webhooks.delete(hook.id) },
     -> { other.webhooks.recover(hook.id, since: Time.now - 60) }, -> { other.events.get(sent.id) },
     -> { other.events.erase_data(sent.id) }, -> { other.deliveries.get(attempt.id) },
     -> { other.deliveries.retry(attempt.id) }, -> { other.replays.get(replay.id) },
     -> { other.replays.cancel(replay.id) }, -> { other.erasures.get(erasure.id) }].each do |call|
      assert_api_error(404, "not_found", &call)
    end
    assert_empty other.webhooks.list
    assert_empty other.events.list.data
    assert_empty other.deliveries.iter.to_a
    # And the owner still sees all of it unchanged.
    assert_equal [hook.url, hook.description], client.webhooks.get(hook.id).then { |w| [w.url, w.description] }
    assert_equal({ "n" => 1 }, client.events.get(sent.id).data)
  ensure
    client.webhooks.delete(hook.id) if hook
    operator.projects.delete(project.id) if project
  end
end
