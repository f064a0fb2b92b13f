# frozen_string_literal: true

require_relative "model"

module Posthorn
  # The public API's answers; field names are the JSON names. Each is checked against
  # `/public/v1/openapi.json` by the test suite.
  module Models
    # What is shown of an endpoint's client certificate (its PEM and key never are).
    class ClientCertificate < Model
      field :subject, :string # e.g. `CN=posthorn-client, O=Shop`
      field :not_after, :time
    end

    # Where an endpoint that is no plain URL sends: `listen`, a `posthorn listen`
    # session's (its deliveries go to the CLI's machine), or a broker it publishes to
    # (`redis`, `nats`, `mqtt`, `rabbitmq`) with its settings; its credentials are never returned.
    class Destination < Model
      field :type, :string # listen, redis, nats, mqtt or rabbitmq
      field :name, :string, null: true # a listen session's `--name`; nil: it ends when its CLI exits
      field :connected, :boolean # a listen session's CLI is connected now
      field :url, :string, null: true # a broker's URL, without credentials
      field :stream, :string, null: true # redis: the stream appended to
      field :maxlen, :integer, null: true # redis: the stream's approximate length bound
      field :subject, :string, null: true # nats: the JetStream subject published to
      field :exchange, :string, null: true # rabbitmq: the exchange ("": the default exchange)
      field :routing_key, :string, null: true # rabbitmq: the routing key
      field :topic, :string, null: true # mqtt: the topic published to
      field :qos, :integer, null: true # mqtt: 0 or 1
      field :credentials_set, :boolean # a broker has credentials (sealed, never shown)
    end

    # An endpoint. +secret+ is only set in the answers to create and rotate_secret of an
    # HMAC endpoint, and to an update that switches to `hmac-sha256`.
    class Webhook < Model
      field :id, :integer
      field :url, :string
      field :events, [:array, :string]
      field :description, :string
      field :enabled, :boolean
      field :created_at, :time
      field :headers, [:array, :string] # the names of the extra headers sent
      field :rate_limit, :integer, null: true # attempts per second at most; nil: unlimited
      # Presented to the receiver when it asks for one (mutual TLS); nil: none.
      field :client_certificate, ClientCertificate, null: true
      # `hmac-sha256` (signed with the secret) or `ed25519` (v1a, checked with public_key).
      field :signature_scheme, :string, default: "hmac-sha256"
      field :public_key, :string, null: true # `whpk_…`, once the endpoint has an ed25519 key
      # The CEL filter events must match to be sent here; nil: every event of +events+.
      field :filter, :string, null: true
      field :secret, :string, null: true
      # Only for an endpoint that is no plain URL (a `posthorn listen` session's).
      field :destination, Destination, null: true
    end

    # A listen session, as listen.open answers it: its endpoint, the secret its
    # deliveries are signed with, and the path (under `/public/v1`) of its WebSocket.
    class ListenSession < Model
      field :endpoint, Webhook
      field :secret, :string # `whsec_…`: the local receiver checks signatures with it
      field :connect_path, :string
      # true: an existing named session was taken up again (answered 200; a new one 201)
      field :reattached, :boolean
    end

    class EventAccepted < Model
      field :id, :string
      field :deliveries, :integer
    end

    # An endpoint subscribed to an event's type that its filter kept the event from.
    class FilteredOut < Model
      field :endpoint_id, :integer
      field :reason, :string # e.g. `the filter was false`, or why the filter failed
    end

    class Event < Model
      field :id, :string
      field :event, :string
      field :deliveries, :integer
      field :created_at, :time
      field :data, :object, null: true # nil once erased
      field :ordering_key, :string, null: true
      field :subjects, [:array, :string], default: [] # [] once erased
      # When its data was erased, and by which erasure; nil while it is kept.
      field :erased_at, :time, null: true
      field :erasure_id, :integer, null: true
      # The endpoints subscribed to its type whose filters it did not pass, and why:
      # they had no attempt (+deliveries+ counts only the others).
      field :filtered_out, [:array, FilteredOut], default: []
    end

    # One delivery attempt.
    class Delivery < Model
      field :id, :integer
      field :request_id, :string
      field :event_id, :string
      field :event_type, :string
      field :endpoint_id, :integer
      field :target_url, :string
      field :attempt, :integer
      field :trigger, :string
      field :triggered_by, :string, null: true
      field :status, :string
      field :scheduled_at, :time
      field :started_at, :time, null: true
      field :created_at, :time
      field :finished_at, :time, null: true
      field :duration_ms, :integer, null: true
      field :response_status, :integer, null: true
      field :error_kind, :string, null: true
      field :error, :string, null: true
      field :ordering_key, :string, null: true
      # While the attempt waits behind an earlier event with the same key: its id.
      field :waits_for, :string, null: true
    end

    # An attempt with the exact body sent and the headers both ways ([name, value] pairs).
    class DeliveryDetail < Delivery
      field :payload, :string, default: ""
      field :request_headers, [:array, [:array, :string]], null: true
      field :response_headers, [:array, [:array, :string]], null: true
      field :response_body, :string, null: true
    end

    # A replay (as webhooks.recover starts it) and how far it has come.
    class Replay < Model
      field :id, :integer
      field :status, :string # running, done or cancelled
      field :total, :integer # the (event, endpoint) pairs it sends, one new attempt each
      field :queued, :integer # attempts queued so far
      field :finished, :integer # of those, attempts with an outcome
      field :per_second, :integer # attempts queued per second, per endpoint
    end

    # An erasure (by subject, or of one event) and what it has erased so far.
    class Erasure < Model
      field :id, :integer
      field :status, :string # running, then done once no attempt of its events is in flight
      field :subject, :string, null: true # nil for the erasure of one event
      field :event_id, :string, null: true # nil for an erasure by subject
      field :created_at, :time
      field :finished_at, :time, null: true
      field :events, :integer # events whose data, subjects and responses were erased
      field :attempts, :integer # attempts of those events
      field :dead_lettered, :integer # waiting attempts ended as dead letters (`erased`)
      field :inspector_copies, :integer # Redirect copies in inspector bins, erased
    end

    # An event type's JSON Schema (draft 2020-12) as set: while it is set, events.send
    # and send_batch refuse events of the type whose `data` fails it.
    class EventTypeSchema < Model
      field :event, :string # the event type, e.g. `order.paid`
      field :version, :integer # 1 when first set, one more at every change
      field :updated_at, :time
      field :schema, :object # the schema as sent
    end
  end
end
