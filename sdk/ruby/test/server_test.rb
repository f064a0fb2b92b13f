# frozen_string_literal: true

require_relative "test_helper"
require_relative "support/readme_receiver"
require "open3"

# Against a real `posthorn serve` on a fresh database (started by sdk/test.sh).
class ServerTest < Minitest::Test
  include ServerTestHelpers

  def only(headers, prefix)
    headers.select { |name, _| name.downcase.start_with?(prefix) }
  end

  def succeeded(event_id)
    wait_for("an attempt of #{event_id} to succeed") do
      client.deliveries.list(event_id: event_id).data.find { |d| d.status == "succeeded" }
    end
  end

  def test_a_delivery_reaches_the_readme_receiver_and_verifies
    port = TestHelper.free_port
    hook = client.webhooks.create("http://127.0.0.1:#{port}/webhooks", ["order.paid"], description: "ruby receiver")
    assert hook.secret.start_with?("whsec_")
    receiver = ReadmeReceiver.new(hook.secret, port)
    begin
      sent = client.events.send("order.paid", { order: 42, note: "ünïcode" })
      assert sent.id.start_with?("evt_")
      assert_equal 1, sent.deliveries
      wait_for("the receiver to handle the event") { receiver.handled(sent.id).any? }
      first = succeeded(sent.id)
      assert_equal [1, 204, hook.id], [first.attempt, first.response_status, first.endpoint_id]

      # What the server sent verifies under each scheme on its own.
      detail = client.deliveries.get(first.id)
      assert_instance_of Posthorn::Models::DeliveryDetail, detail
      %w[webhook- x-botix-].each do |prefix|
        event = Posthorn::Webhook.verify(detail.payload, only(detail.request_headers, prefix), hook.secret)
        assert_equal [sent.id, "ünïcode"], [event["event_id"], event["data"]["note"]]
      end

      # A manual retry is the same event again: answered 2xx, handled once.
      again = client.deliveries.retry(first.id)
      assert_equal [2, sent.id], [again.attempt, again.event_id]
      wait_for("the retry to succeed") { client.deliveries.get(again.id).status == "succeeded" }
      assert_equal 1, receiver.handled(sent.id).size

      # After a rotation deliveries carry both signatures: the receiver, still on the
      # old secret, accepts them, and so does the new secret.
      rotated = client.webhooks.rotate_secret(hook.id)
      refute_equal hook.secret, rotated.secret
      later = client.events.send("order.paid", { order: 43 })
      wait_for("the post-rotation event") { receiver.handled(later.id).any? }
      done = wait_for("its attempt") { client.deliveries.iter(event_id: later.id).find { |d| d.status == "succeeded" } }
      d = client.deliveries.get(done.id)
      assert_equal later.id, Posthorn::Webhook.verify(d.payload, d.request_headers, rotated.secret)["event_id"]

      # A forged request is refused by the receiver.
      forged = { "webhook-id" => "evt_forged", "webhook-timestamp" => Time.now.to_i.to_s,
                 "webhook-signature" => "v1,AAAA", "content-type" => "application/json" }
      answer = Net::HTTP.new("127.0.0.1", port).post("/webhooks", '{"event_id":"evt_forged"}', forged)
      assert_equal "400", answer.code
    ensure
      receiver.stop
      client.webhooks.delete(hook.id)
    end
    assert_api_error(404, "not_found") { client.webhooks.get(hook.id) }
  end

  def test_an_ed25519_endpoints_deliveries_verify_with_its_public_key
    port = TestHelper.free_port
    hook = client.webhooks.create("http://127.0.0.1:#{port}/webhooks", ["order.paid"], signature_scheme: "ed25519")
    assert_equal ["ed25519", nil], [hook.signature_scheme, hook.secret]
    assert hook.public_key.start_with?("whpk_")
    # The README's receiver, given the public key where the secret would go.
    receiver = ReadmeReceiver.new(hook.public_key, port)
    begin
      sent = client.events.send("order.paid", { order: 44, note: "ünïcode" })
      wait_for("the receiver to handle the event") { receiver.handled(sent.id).any? }
      detail = client.deliveries.get(succeeded(sent.id).id)
      names = detail.request_headers.to_h { |name, value| [name.downcase, value] }
      refute names.key?("x-botix-signature")
      assert(names["webhook-signature"].split.all? { |entry| entry.start_with?("v1a,") })
      assert_equal sent.id, Posthorn::Webhook.verify(detail.payload, detail.request_headers, hook.public_key)["event_id"]
    ensure
      receiver.stop
      client.webhooks.delete(hook.id)
    end
  end

  def test_webhooks_crud
    hook = client.webhooks.create("https://example.com/crud", ["*"], headers: { "X-Token" => "t" })
    assert_equal [["X-Token"], ["*"]], [hook.headers, hook.events]
    assert_instance_of Time, hook.created_at
    changed = client.webhooks.update(hook.id, events: %w[a.b c.d], enabled: false, description: "off", rate_limit: 5)
    assert_equal [%w[a.b c.d], false, "off", 5, nil],
                 [changed.events, changed.enabled, changed.description, changed.rate_limit, changed.secret]
    assert_includes client.webhooks.list.map(&:id), hook.id
    assert_equal changed, client.webhooks.get(hook.id)
    assert_nil client.webhooks.update(hook.id, rate_limit: nil).rate_limit # unlimited again
    client.webhooks.delete(hook.id)
    assert_api_error(422, "invalid") { client.webhooks.create("ftp://example.com", ["*"]) }
  end

  # A self-signed certificate (CN=sdk-client, 30 days), its key and a key of another,
  # made by the openssl command line as the other suites do.
  def pem
    Dir.mktmpdir("posthorn-ruby-pem") do |dir|
      curve = %w[-pkeyopt ec_paramgen_curve:prime256v1]
      [%w[req -x509 -newkey ec] + curve + %w[-nodes -keyout key.pem -out cert.pem -days 30 -subj /CN=sdk-client],
       %w[genpkey -algorithm EC] + curve + %w[-out other.pem]].each do |args|
        out, status = Open3.capture2e("openssl", *args, chdir: dir)
        flunk("openssl #{args.first} failed: #{out}") unless status.success?
      end
      %w[cert key other].to_h { |name| [name.to_sym, File.read(File.join(dir, "#{name}.pem"))] }
    end
  end

  def test_a_client_certificate_is_set_shown_and_removed
    pem = self.pem
    pair = pem.slice(:cert, :key)
    hook = client.webhooks.create("https://example.com/mtls-ruby", ["*"], client_certificate: pair)
    begin
      cert = hook.client_certificate
      assert_instance_of Posthorn::Models::ClientCertificate, cert
      assert_equal "CN=sdk-client", cert.subject
      assert_includes 28..30, ((cert.not_after - Time.now) / 86_400).floor
      assert_equal cert, client.webhooks.get(hook.id).client_certificate
      # Absent leaves it as it is; nil removes it.
      assert_equal cert, client.webhooks.update(hook.id, description: "kept").client_certificate
      assert_nil client.webhooks.update(hook.id, client_certificate: nil).client_certificate
      assert_nil client.webhooks.get(hook.id).client_certificate
      assert_equal cert, client.webhooks.update(hook.id, client_certificate: pair).client_certificate
    ensure
      client.webhooks.delete(hook.id)
    end
    refused = assert_api_error(422, "invalid") do
      client.webhooks.create("https://example.com/mtls-ruby", ["*"], client_certificate: { cert: pem[:cert], key: pem[:other] })
    end
    assert_equal "client_certificate: the key does not belong to the first certificate", refused.api_message
  end

  def test_a_filter_decides_which_events_an_endpoint_gets
    kind = "payment.filtered_rb"
    bad = assert_api_error(422, "invalid") do
      client.webhooks.create("https://example.com/filtered", [kind], filter: "data.amount >")
    end
    assert bad.api_message.start_with?("filter: ")
    assert_includes bad.api_message, "at 1:14"
    hook = client.webhooks.create("https://example.com/filtered", [kind], filter: "data.amount > 1000")
    begin
      assert_equal "data.amount > 1000", hook.filter
      assert_equal "data.amount > 1000", client.webhooks.get(hook.id).filter
      assert_api_error(422, "invalid") { client.webhooks.update(hook.id, filter: "data.amount >") }

      # Too small: no attempt, and the event says which endpoint it skipped and why.
      small = client.events.send(kind, { amount: 5 })
      assert_equal 0, small.deliveries
      got = client.events.get(small.id)
      skipped = Posthorn::Models::FilteredOut.new(endpoint_id: hook.id, reason: "the filter was false")
      assert_equal [0, [skipped]], [got.deliveries, got.filtered_out]
      listed = wait_for("the event in the list") { client.events.list(type: kind).data.find { |e| e.id == small.id } }
      assert_equal got.filtered_out, listed.filtered_out
      big = client.events.send(kind, { amount: 5000 })
      assert_equal 1, big.deliveries
      assert_equal [1, []], client.events.get(big.id).then { |e| [e.deliveries, e.filtered_out] }

      # Absent leaves it as it is; nil removes it.
      assert_equal "data.amount > 1000", client.webhooks.update(hook.id, description: "kept").filter
      assert_equal "data.amount > 10", client.webhooks.update(hook.id, filter: "data.amount > 10").filter
      assert_nil client.webhooks.update(hook.id, filter: nil).filter
      assert_nil client.webhooks.get(hook.id).filter
      assert_equal 1, client.events.send(kind, { amount: 5 }).deliveries
    ensure
      client.webhooks.delete(hook.id)
    end
  end

  def test_an_event_types_schema_refuses_data_that_fails_it
    kind = "order.schema_rb"
    schema = { "type" => "object", "required" => ["amount"],
               "properties" => { "amount" => { "type" => "integer", "minimum" => 1 }, "note" => {} } }
    first = client.event_types.set_schema(kind, schema)
    assert_instance_of Posthorn::Models::EventTypeSchema, first
    assert_equal [kind, 1, schema], [first.event, first.version, first.schema]
    assert_equal schema, client.event_types.get_schema(kind) # `{}` stays an object

    # Data that fails it is refused, the message naming the path and the rule.
    refused = assert_api_error(422, "invalid") { client.events.send(kind, { amount: 0 }) }
    assert refused.api_message.start_with?("data.amount:")
    assert_includes refused.api_message, "minimum"
    batch = assert_api_error(422, "invalid") do
      client.events.send_batch([{ event: kind, data: { amount: 1 } }, { event: kind, data: {} }])
    end
    assert batch.api_message.start_with?("events[1].")
    assert client.events.send(kind, { amount: 5 }).id.start_with?("evt_")

    again = client.event_types.set_schema(kind, schema)
    assert_equal [2, schema], [again.version, again.schema]
    assert_operator again.updated_at, :>=, first.updated_at
    bad = assert_api_error(422, "invalid") { client.event_types.set_schema(kind, { "$ref" => "https://example.com/x.json" }) }
    assert bad.api_message.start_with?("schema")
    assert_equal schema, client.event_types.get_schema(kind) # the refused one changed nothing

    client.event_types.delete_schema(kind)
    assert_api_error(404, "not_found") { client.event_types.get_schema(kind) }
    assert_api_error(404, "not_found") { client.event_types.delete_schema(kind) }
    assert client.events.send(kind, { amount: 0 }).id.start_with?("evt_")
  end

  def test_an_ordering_key_is_sent_and_read_back
    hook = client.webhooks.create("https://example.com/ordered", ["order.keyed_rb"])
    key = TestHelper.unique("customer")
    sent = client.events.send("order.keyed_rb", { n: 1 }, ordering_key: key)
    assert_equal key, client.events.get(sent.id).ordering_key
    # Its attempts (a retry may already be queued: example.com does not answer here).
    page = client.deliveries.list(ordering_key: key)
    refute_empty page.data
    assert_equal [[sent.id, key]], page.data.map { |d| [d.event_id, d.ordering_key] }.uniq
    assert_equal page.data.map(&:id), client.deliveries.iter(ordering_key: key).first(page.data.size).map(&:id)
  ensure
    client.webhooks.delete(hook.id) if hook
  end

  def test_the_iterator_walks_250_events_each_exactly_once
    kind = "walk.rb_#{Time.now.to_i}"
    queue = Queue.new
    250.times { |n| queue << n }
    queue.close
    # [n, id] pairs from four threads, then the ids in the order of n.
    sent = Array.new(4) do
      Thread.new { [].tap { |pairs| while (n = queue.pop) do pairs << [n, client.events.send(kind, { n: n }).id] end } }
    end.flat_map(&:value).sort.map(&:last)
    assert_equal 250, sent.uniq.size

    first = client.events.list(type: kind, limit: 100)
    assert_equal 100, first.data.size
    assert first.has_more?
    refute_empty first.next_cursor

    it = client.events.iter(type: kind, page_size: 100)
    seen = it.map(&:id)
    # Rows of transactions still open are held back; go on from the stored cursor.
    deadline = Time.now + 30
    while seen.size < 250 && Time.now < deadline
      sleep 0.5
      it = client.events.iter(type: kind, cursor: it.cursor, page_size: 100)
      seen += it.map(&:id)
    end
    assert_equal 250, seen.size
    assert_equal sent.sort, seen.sort
    assert_equal({ "n" => 7 }, client.events.get(sent[7]).data)
    # The stored cursor resumes after the last one: nothing is seen twice.
    assert_empty client.events.iter(type: kind, cursor: it.cursor).to_a
    # An Enumerator too: lazily, one page at a time.
    enum = client.events.iter(type: kind, page_size: 10).each
    assert_equal seen.first(3), [enum.next, enum.next, enum.next].map(&:id)
  end
end
