# frozen_string_literal: true

require_relative "test_helper"

# Listen sessions (`posthorn listen`) against a real `posthorn serve` (started by
# sdk/test.sh): opened, reattached by name, ended by deleting the endpoint.
class ListenTest < Minitest::Test
  include ServerTestHelpers

  def test_a_listen_session_opens_and_its_name_reattaches_to_it
    statuses = []
    listening = client(on_response: ->(a) { statuses << a.status if a.path == "/listen" })
    name = TestHelper.unique("rb-listen")
    first = listening.listen.open("http://127.0.0.1:9/x", name: name)
    begin
      assert_instance_of Posthorn::Models::ListenSession, first
      refute first.reattached
      assert first.secret.start_with?("whsec_"), first.secret
      refute_empty first.connect_path
      assert_equal "http://127.0.0.1:9/x", first.endpoint.url
      destination = first.endpoint.destination
      assert_equal ["listen", name], [destination.type, destination.name]

      again = listening.listen.open("http://127.0.0.1:9/x", name: name)
      assert again.reattached
      assert_equal [first.endpoint.id, first.secret], [again.endpoint.id, again.secret]
      assert_equal [201, 200], statuses

      # Deleting its endpoint ends the session.
      client.webhooks.delete(first.endpoint.id)
      assert_api_error(404, "not_found") { client.webhooks.get(first.endpoint.id) }
    ensure
      begin
        client.webhooks.delete(first.endpoint.id)
      rescue Posthorn::ApiError
        nil # deleted above
      end
    end
  end
end
