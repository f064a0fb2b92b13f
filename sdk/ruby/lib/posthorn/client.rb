# frozen_string_literal: true

require "securerandom"

module Posthorn
  # Posthorn's public API (`/public/v1`), one reader per resource.
  #
  #   client = Posthorn::Client.new("phk_…", base_url: "https://posthorn.example.com")
  #   client.events.iter(since: "2026-11-01T00:00:00Z").each { |event| puts event.id }
  #
  # Calls back off on 429 (honouring Retry-After), wait for the minute's reset when the
  # quota is spent, and retry 5xx and connection errors for calls safe to repeat.
  class Client
    attr_reader :webhooks, :events, :deliveries, :replays, :erasures, :event_types, :listen
    # The HTTP layer (for its #sleeper and #policy); not needed to call the API.
    attr_reader :transport

    # +on_response+ is called with an Attempt after every HTTP attempt.
    def initialize(api_key, base_url: nil, timeout: 30.0, max_retries: 5, backoff_base: 0.5, backoff_cap: 30.0,
                   max_wait: 120.0, rate_limit_threshold: 1, on_response: nil)
      @transport = Posthorn.transport_for(
        api_key, base_url, "/public/v1",
        timeout: timeout, on_response: on_response, max_retries: max_retries, backoff_base: backoff_base,
        backoff_cap: backoff_cap, max_wait: max_wait, rate_limit_threshold: rate_limit_threshold
      )
      @webhooks = Webhooks.new(@transport)
      @events = Events.new(@transport)
      @deliveries = Deliveries.new(@transport)
      @replays = Replays.new(@transport)
      @erasures = Erasures.new(@transport)
      @event_types = EventTypes.new(@transport)
      @listen = Listen.new(@transport)
    end
  end

  # `/webhooks`: the project's endpoints.
  class Webhooks < Resource
    # Creates an endpoint; the answer carries its +secret+ (or, with signature_scheme
    # `ed25519`, its +public_key+). Not retried on 5xx: a repeat could create a second.
    # rate_limit:: attempts per second at most (nil: unlimited)
    # client_certificate:: `{cert:, key:}` in PEM, presented when the receiver asks
    # filter:: a CEL expression over `event`, `data` and `subjects`
    # destination:: instead of +url+ (pass nil), a broker to publish to:
    #   `{type: "redis", url: "redis://:pw@host:6379/0", stream: "orders"}` or
    #   `{type: "nats", url: "nats://host:4222", subject: "orders.paid"}`; its credentials
    #   are never returned
    def create(url, events, description: UNSET, headers: UNSET, rate_limit: UNSET, client_certificate: UNSET,
               signature_scheme: UNSET, filter: UNSET, destination: UNSET)
      body = given(url: url.nil? ? UNSET : url, events: events.to_a, description: description, headers: headers,
                   rate_limit: rate_limit, client_certificate: client_certificate,
                   signature_scheme: signature_scheme, filter: filter, destination: destination)
      call("POST", "/webhooks", Models::Webhook, body: body, retry_safe: false)
    end

    def list
      call("GET", "/webhooks", retry_safe: true).fetch("data").map { |w| Models::Webhook.from_json(w) }
    end

    def get(webhook_id)
      call("GET", path("webhooks", webhook_id), Models::Webhook, retry_safe: true)
    end

    # Changes the options given only. nil removes: `rate_limit: nil` lifts the limit,
    # `client_certificate: nil` drops the certificate, `filter: nil` the filter. A switch
    # of signature_scheme signs both ways for 24 hours; one to `hmac-sha256` answers the
    # new secret. Retried like a GET: it sets values, so a repeat leaves the same endpoint.
    def update(webhook_id, url: UNSET, events: UNSET, description: UNSET, enabled: UNSET, headers: UNSET,
               rate_limit: UNSET, client_certificate: UNSET, signature_scheme: UNSET, filter: UNSET)
      body = given(url: url, events: events, description: description, enabled: enabled, headers: headers,
                   rate_limit: rate_limit, client_certificate: client_certificate,
                   signature_scheme: signature_scheme, filter: filter)
      call("PATCH", path("webhooks", webhook_id), Models::Webhook, body: body, retry_safe: true)
    end

    def delete(webhook_id)
      call("DELETE", path("webhooks", webhook_id), retry_safe: true)
      nil
    end

    # A new secret; the old one stays valid for a while (deliveries carry both
    # signatures). Not retried on 5xx: a repeat would rotate twice.
    def rotate_secret(webhook_id)
      call("POST", path("webhooks", webhook_id, "rotate-secret"), Models::Webhook, retry_safe: false)
    end

    # Replays, once each, the endpoint's (event, endpoint) pairs still failing among the
    # attempts made from +since+ to +until+ (default: now): failed or dead-lettered, with
    # no success and nothing waiting. Times are RFC 3339 strings or Times. Answers the
    # Replay at once (+total+ may be 0); follow it with replays.get. Not retried on 5xx:
    # a repeat would start a second replay.
    def recover(webhook_id, since:, until: nil)
      # `until` is a keyword of Ruby: the argument is read through the binding.
      up_to = binding.local_variable_get(:until)
      body = { since: time_param(since) }
      body[:until] = time_param(up_to) unless up_to.nil?
      call("POST", path("webhooks", webhook_id, "recover"), Models::Replay, body: body, retry_safe: false)
    end
  end

  # `/events`: send events; read them back by id or by cursor; erase one's data.
  class Events < Resource
    # `events.erase_data` may wait 40 s on the server for attempts in flight.
    ERASE_TIMEOUT = 60.0

    # Stores the event and fans it out to every subscribed endpoint (an EventAccepted).
    #
    # An idempotency key is made up when none is given, so a retry after a lost answer
    # never sends the event twice; pass your own to de-duplicate across processes. Events
    # with the same +ordering_key+ reach each endpoint one at a time, in order.
    # +subjects+ name the data subjects it is about (`user:42`; at most 10).
    #
    # (The name shadows Object#send on this object alone, as in the other libraries;
    # #public_send and #__send__ still work.)
    def send(event, data, idempotency_key: nil, ordering_key: UNSET, subjects: UNSET)
      body = given(event: event, data: data, ordering_key: ordering_key, subjects: subjects)
      headers = { "Idempotency-Key" => idempotency_key || new_key }
      call("POST", "/events", Models::EventAccepted, body: body, headers: headers, retry_safe: true)
    end

    # Stores up to 100 events in one request, all or none, fanned out in order; answers
    # their EventAccepted in the same order. Items are Hashes with `event`, `data` and
    # optionally `id` (the idempotency key, made up when absent), `ordering_key` and
    # `subjects`. Each costs one unit of the rate limit.
    def send_batch(events)
      items = events.map do |item|
        item = item.to_h.transform_keys(&:to_s)
        item.merge("id" => item["id"] || new_key)
      end
      body = call("POST", "/events/batch", body: { events: items }, retry_safe: true)
      body.fetch("data").map { |accepted| Models::EventAccepted.from_json(accepted) }
    end

    def get(event_id)
      call("GET", path("events", event_id), Models::Event, retry_safe: true)
    end

    # Erases the event's data and subjects and its attempts' response bodies and headers;
    # its waiting attempts become dead letters. Answers nil once done (also for an event
    # erased before), or the Erasure still running if an attempt was in flight after the
    # server's 40 s wait. Retried like a GET: a repeat erases nothing more.
    def erase_data(event_id)
      call("DELETE", path("events", event_id, "data"), Models::Erasure,
           retry_safe: true, timeout: [@t.timeout, ERASE_TIMEOUT].max)
    end

    # One page, oldest first.
    def list(cursor: nil, limit: nil, since: nil, type: nil)
      page("/events", { cursor: cursor, limit: limit, since: time_param(since), type: type }, Models::Event)
    end

    # Every event from +cursor+ (or the beginning) on, each exactly once.
    def iter(cursor: nil, since: nil, type: nil, page_size: 100)
      CursorIterator.new(cursor) { |c| list(cursor: c, limit: page_size, since: since, type: type) }
    end

    private

    def new_key
      "phk-#{SecureRandom.uuid}"
    end
  end

  # `/deliveries`: every attempt; manual retry.
  class Deliveries < Resource
    def list(cursor: nil, limit: nil, since: nil, status: nil, event_id: nil, ordering_key: nil)
      query = { cursor: cursor, limit: limit, since: time_param(since), status: status, event_id: event_id,
                ordering_key: ordering_key }
      page("/deliveries", query, Models::Delivery)
    end

    def iter(cursor: nil, since: nil, status: nil, event_id: nil, ordering_key: nil, page_size: 100)
      CursorIterator.new(cursor) do |c|
        list(cursor: c, limit: page_size, since: since, status: status, event_id: event_id,
             ordering_key: ordering_key)
      end
    end

    # The attempt with the body sent and the headers both ways.
    def get(delivery_id)
      call("GET", path("deliveries", delivery_id), Models::DeliveryDetail, retry_safe: true)
    end

    # Sends the event again as a new attempt. Not retried on 5xx: a repeat would queue a
    # second attempt (or answer 409).
    def retry(delivery_id)
      call("POST", path("deliveries", delivery_id, "retry"), Models::Delivery, retry_safe: false)
    end
  end

  # `/replays`: follow or cancel a replay started by webhooks.recover.
  class Replays < Resource
    def get(replay_id)
      call("GET", path("replays", replay_id), Models::Replay, retry_safe: true)
    end

    # Stops the replay (what it queued stays queued) and answers it: `cancelled`, or
    # unchanged if it had finished. Retried like a GET.
    def cancel(replay_id)
      call("POST", path("replays", replay_id, "cancel"), Models::Replay, retry_safe: true)
    end
  end

  # `/erasures`: erase every event that names a data subject; follow an erasure.
  class Erasures < Resource
    # Erases, in the background, every event accepted until now whose subjects name
    # +subject+; answers the Erasure at once (`running`). Counts against the project's
    # concurrent_erasures (ApiError 422 `limit_reached`). Not retried on 5xx.
    def create(subject)
      call("POST", "/erasures", Models::Erasure, body: { subject: subject }, retry_safe: false)
    end

    def get(erasure_id)
      call("GET", path("erasures", erasure_id), Models::Erasure, retry_safe: true)
    end
  end

  # `/event-types/{type}/schema`: a JSON Schema per event type, which the `data` of its
  # events must pass.
  class EventTypes < Resource
    # Sets (or replaces) the JSON Schema (draft 2020-12) of +type+: from now on
    # events.send raises ApiError 422 `invalid` for data that fails it, the message
    # naming the path and the rule. Answers an EventTypeSchema (+version+ 1, then one
    # more at every change). Retried like a GET.
    def set_schema(type, schema)
      call("PUT", path("event-types", type, "schema"), Models::EventTypeSchema, body: schema.to_h, retry_safe: true)
    end

    # The schema as set (a Hash); ApiError 404 `not_found` when the type has none.
    def get_schema(type)
      call("GET", path("event-types", type, "schema"), retry_safe: true)
    end

    # Removes the type's schema; ApiError 404 `not_found` when it has none.
    def delete_schema(type)
      call("DELETE", path("event-types", type, "schema"), retry_safe: true)
      nil
    end
  end

  # `/listen`: the listen sessions of `posthorn listen`, which forwards a project's
  # deliveries to a receiver on the CLI's machine. The CLI is the usual way to use them;
  # #open is what it calls first.
  class Listen < Resource
    # Opens a listen session (answered 201), or reattaches to the project's live session
    # named +name+ (200, +reattached+ true: the same endpoint, the same secret, the
    # attempts that waited). Answers a ListenSession. A project holds at most 5, each
    # counting as an endpoint; webhooks.delete of its endpoint ends one. Retried on 5xx
    # only with a +name+: a named open is idempotent, a repeated unnamed one would make a
    # second session.
    # forward:: the local receiver's URL, where the CLI sends the deliveries
    # events:: event types, or `["*"]` (the default) for all
    # name:: `^[A-Za-z0-9._-]{1,64}$`; unnamed, the session ends when its CLI exits
    # filter:: a CEL filter, as an endpoint's
    #
    # (The name shadows Kernel#open on this object alone.)
    def open(forward, events: UNSET, name: UNSET, filter: UNSET)
      body = given(forward: forward, events: events, name: name, filter: filter)
      named = !name.equal?(UNSET) && !name.nil?
      call("POST", "/listen", Models::ListenSession, body: body, retry_safe: named)
    end
  end
end
