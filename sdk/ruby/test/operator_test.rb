# frozen_string_literal: true

require_relative "test_helper"

# The operator client against a real `posthorn serve` (started by sdk/test.sh).
class OperatorTest < Minitest::Test
  include ServerTestHelpers

  def utc_today = Time.now.utc.to_date

  def test_a_project_from_creation_to_deletion
    op = operator
    uid = TestHelper.unique("rb-customer")
    project = op.projects.create("Ruby customer", uid: uid, plan: "business",
                                                  limits: { endpoints: 5, concurrent_erasures: 2 },
                                                  frame_ancestors: ["https://app.example.com"],
                                                  brand: { name: "Acme", accent: "#4f46e5" })
    assert_equal [uid, "Ruby customer", "business"], [project.uid, project.name, project.plan]
    assert_instance_of Posthorn::Models::EffectiveLimits, project.limits
    assert_equal [5, 2], [project.limits.endpoints, project.limits.concurrent_erasures]
    assert_equal ["https://app.example.com"], project.frame_ancestors
    assert_equal Posthorn::Models::Brand.new(name: "Acme", accent: "#4f46e5"), project.brand
    assert_instance_of Time, project.created_at

    # Found by the operator's own id; an unknown one finds nothing.
    assert_equal project, op.projects.find(uid)
    assert_equal project, op.projects.get(project.id)
    assert_nil op.projects.find(TestHelper.unique("rb-nobody"))

    # Updated: only the options given change; brand and frame_ancestors are replaced whole.
    changed = op.projects.update(project.id, name: "Ruby customer, renamed",
                                             frame_ancestors: ["https://portal.example.com", "http://localhost:8080"],
                                             brand: { accent: "#112233", logo_url: "https://cdn.example.com/logo.png" })
    assert_equal "Ruby customer, renamed", changed.name
    assert_equal ["https://portal.example.com", "http://localhost:8080"], changed.frame_ancestors
    assert_equal Posthorn::Models::Brand.new(accent: "#112233", logo_url: "https://cdn.example.com/logo.png"), changed.brand
    assert_equal [uid, "business", project.limits], [changed.uid, changed.plan, changed.limits]
    assert_equal changed, op.projects.get(project.id)

    # A second project with the same uid conflicts; a wildcard is not an origin.
    assert_api_error(409, "conflict") { op.projects.create("Ruby duplicate", uid: uid) }
    err = assert_api_error(422, "invalid") { op.projects.update(project.id, frame_ancestors: ["https://*.example.com"]) }
    assert_includes err.api_message, "frame_ancestors"
    assert_api_error(422, "invalid") do
      op.projects.create(TestHelper.unique("rb-bad"), frame_ancestors: ["https://*.example.com"])
    end
    assert_equal changed, op.projects.get(project.id)

    # A key minted for the project opens the public API, until it is revoked.
    today = utc_today
    key = op.api_keys.create(project.id, "ruby production")
    assert_instance_of Posthorn::Models::CreatedKey, key
    assert_equal "ruby production", key.name
    assert key.key.start_with?(key.prefix, "phk_")
    public_client = client(key.key)
    hook = public_client.webhooks.create("https://example.com/operator-rb", ["order.paid"])
    assert_equal 1, public_client.events.send("order.paid", { order: 1 }).deliveries
    assert_equal [hook.id], public_client.webhooks.list.map(&:id)
    op.api_keys.revoke(project.id, key.id)
    assert_api_error(401, "unauthorized") { public_client.events.send("order.paid", { order: 2 }) }
    op.api_keys.revoke(project.id, key.id) # a repeat (as after a lost answer) is harmless
    assert_api_error(404, "not_found") { op.api_keys.revoke(project.id, key.id + 10**9) }

    # Usage counts the event on its UTC day.
    usage = op.usage.get(project.id, since: today, until: utc_today)
    assert_equal [project.id, today, utc_today], [usage.project_id, usage.since, usage.until]
    assert_equal 1, usage.events
    assert_instance_of Posthorn::Models::AttemptCounts, usage.attempts
    assert_equal [[today, 1]], usage.days.map { |d| [d.day, d.events] }
    # The same window as text and as a Time; its attempts may still be counting (the
    # event's attempts fail at example.com and are retried 200 ms apart).
    by_text = op.usage.get(project.id, since: today.iso8601, until: Time.now)
    assert_equal [project.id, today, utc_today, 1], [by_text.project_id, by_text.since, by_text.until, by_text.events]
    assert_api_error(422, "invalid") { op.usage.get(project.id, since: "yesterday") }

    # A portal link, single-use, expiring when asked.
    before = Time.now
    link = op.portal_links.create(project.id, "user-7", "member", email: "ana@example.com", name: "Ana", expires_in: 600)
    assert link.url.start_with?("#{base_url}/portal/")
    assert_in_delta before + 600, link.expires_at, 10
    viewer = op.portal_links.create(project.id, "user-8", "viewer")
    assert_includes viewer.url, "/portal/"
    refute_equal link.url, viewer.url
    assert_api_error(422, "invalid") { op.portal_links.create(project.id, "user-9", "admin") }

    # Deleted: gone at once, and so is everything under it.
    op.projects.delete(project.id)
    assert_api_error(404, "not_found") { op.projects.get(project.id) }
    assert_api_error(404, "not_found") { op.projects.delete(project.id) }
    assert_api_error(404, "not_found") { op.usage.get(project.id) }
    assert_nil op.projects.find(uid)
  end

  def test_the_list_pages_through_every_project_once
    op = operator
    created = Array.new(3) { op.projects.create(TestHelper.unique("rb-page")) }
    first = op.projects.list(limit: 2)
    assert_equal 2, first.data.size
    assert first.has_more?
    second = op.projects.list(limit: 2, cursor: first.next_cursor)
    assert_empty first.data.map(&:id) & second.data.map(&:id)

    it = op.projects.iter(page_size: 2)
    ids = it.map(&:id)
    assert_equal ids.uniq, ids
    created_ids = created.map(&:id)
    assert_equal created_ids, ids.select { |id| created_ids.include?(id) }
    refute_nil it.cursor # resumes after the last one read
    assert_empty op.projects.iter(cursor: it.cursor, page_size: 2).map(&:id) & created_ids
    assert_api_error(422, "invalid") { op.projects.list(limit: 0) }
  ensure
    created&.each { |p| op.projects.delete(p.id) }
  end

  def test_a_wrong_operator_key_is_refused
    # A project's API key is not one either.
    ["pho_#{"x" * 43}", business_key].each do |key|
      assert_api_error(401, "unauthorized") { operator(key).projects.list }
    end
    assert_raises(ArgumentError) { Posthorn::Operator.new("") }
  end
end
