# frozen_string_literal: true

require "date"

module Posthorn
  # The operator API's answers, checked against `/operator/v1/openapi.json` by the suite.
  module Models
    # Every limit's value for the project: the default, the plan's or the override.
    class EffectiveLimits < Model
      field :endpoints, :integer
      field :api_keys, :integer
      field :members, :integer
      field :event_types_per_endpoint, :integer
      field :concurrent_replays, :integer
      field :data_depth, :integer
      field :concurrent_erasures, :integer
      field :api_requests_per_minute, :integer
      field :retention_days, :integer
    end

    # What the portal shows instead of Posthorn's look; nil: not set.
    class Brand < Model
      field :name, :string, null: true
      field :accent, :string, null: true
      field :logo_url, :string, null: true
    end

    # One of the operator's customers.
    class Project < Model
      field :id, :integer
      field :name, :string
      field :plan, :string
      field :limits, EffectiveLimits
      field :frame_ancestors, [:array, :string] # origins that may frame its portal pages
      field :brand, Brand
      field :trace_propagation, :boolean # attempts carry W3C trace context to its receivers
      field :created_at, :time
      field :uid, :string, null: true # the operator's own id for this customer
    end

    # A project's new public API key. +key+ is shown this once (stored hashed).
    class CreatedKey < Model
      field :id, :integer
      field :name, :string
      field :prefix, :string
      field :key, :string
      field :created_at, :time
    end

    class AttemptCounts < Model
      field :succeeded, :integer
      field :failed, :integer
      field :dead_letter, :integer
    end

    class UsageDay < Model
      field :day, :date
      field :events, :integer
      field :attempts, AttemptCounts
    end

    # What a project used from +since+ to +until+ (UTC days, both included).
    class Usage < Model
      field :project_id, :integer
      field :since, :date
      field :until, :date
      field :events, :integer # events accepted in the window
      field :attempts, AttemptCounts # attempts finished in the window, by how they ended
      field :days, [:array, UsageDay] # the days that saw any use, oldest first
    end

    # Single-use: opening +url+ signs the browser into the project's portal.
    class PortalLink < Model
      field :url, :string
      field :expires_at, :time
    end
  end

  # Posthorn's operator API (`/operator/v1`), authenticated by an operator key (`pho_…`,
  # made by `posthorn create-operator-key`): the platform's customers as projects, their
  # API keys, usage and portal links.
  #
  #   op = Posthorn::Operator.new("pho_…", base_url: "https://posthorn.example.com")
  #   project = op.projects.create("Acme", uid: "customer-42", plan: "business")
  #   key = op.api_keys.create(project.id, "production").key   # phk_… for Client
  #
  # Retries as Client does: 429s wait out Retry-After; 5xx and connection errors are
  # retried only for calls safe to repeat (GET, PATCH, DELETE).
  class Operator
    attr_reader :projects, :api_keys, :usage, :portal_links, :transport

    def initialize(operator_key, base_url: nil, timeout: 30.0, max_retries: 5, backoff_base: 0.5,
                   backoff_cap: 30.0, max_wait: 120.0, on_response: nil)
      @transport = Posthorn.transport_for(
        operator_key, base_url, "/operator/v1",
        timeout: timeout, on_response: on_response, max_retries: max_retries, backoff_base: backoff_base,
        backoff_cap: backoff_cap, max_wait: max_wait
      )
      @projects = Projects.new(@transport)
      @api_keys = ApiKeys.new(@transport)
      @usage = UsageReports.new(@transport)
      @portal_links = PortalLinks.new(@transport)
    end

    # `/projects`: the operator's customers, one project each.
    class Projects < Resource
      # Creates a project. +uid+ is the operator's own id for the customer, unique among
      # live projects (ApiError 409 `conflict`); +plan+ `trial` (the default) or
      # `business`; +limits+ overrides (`{endpoints: 50, …}`); +frame_ancestors+ the
      # origins that may frame its portal; +brand+ `{name:, accent:, logo_url:}`. Not
      # retried on 5xx: a repeat could create two.
      def create(name, uid: UNSET, plan: UNSET, limits: UNSET, frame_ancestors: UNSET, brand: UNSET,
                 trace_propagation: UNSET)
        body = given(name: name, uid: uid, plan: plan, limits: limits, frame_ancestors: frame_ancestors, brand: brand,
                     trace_propagation: trace_propagation)
        call("POST", "/projects", Models::Project, body: body, retry_safe: false)
      end

      # One page of live projects, oldest first (+limit+ 1 to 200, default 50).
      def list(cursor: nil, limit: nil, uid: nil)
        body = call("GET", "/projects", query: { cursor: cursor, limit: limit, uid: uid }, retry_safe: true)
        Page.new(data: body.fetch("data").map { |p| Models::Project.from_json(p) },
                 has_more: body.fetch("has_more") == true, next_cursor: body.fetch("next_cursor"))
      end

      # Every live project from +cursor+ (or the beginning) on, each exactly once.
      def iter(cursor: nil, uid: nil, page_size: 100)
        CursorIterator.new(cursor) { |c| list(cursor: c, limit: page_size, uid: uid) }
      end

      # The live project that carries the operator's id +uid+, or nil.
      def find(uid)
        list(uid: uid, limit: 1).data.first
      end

      def get(project_id)
        call("GET", path("projects", project_id), Models::Project, retry_safe: true)
      end

      # Changes the options given only; +limits+, +frame_ancestors+ and +brand+ each
      # replace the old value whole (`frame_ancestors: []` lets no site frame the
      # portal). Retried like a GET: a repeat leaves the same project.
      def update(project_id, name: UNSET, uid: UNSET, plan: UNSET, limits: UNSET, frame_ancestors: UNSET,
                 brand: UNSET, trace_propagation: UNSET)
        body = given(name: name, uid: uid, plan: plan, limits: limits, frame_ancestors: frame_ancestors, brand: brand,
                     trace_propagation: trace_propagation)
        call("PATCH", path("projects", project_id), Models::Project, body: body, retry_safe: true)
      end

      # Gone at once: its id answers 404, its keys and portal sessions stop working; its
      # data is purged in the background.
      def delete(project_id)
        call("DELETE", path("projects", project_id), retry_safe: true)
        nil
      end
    end

    # `/projects/{id}/api-keys`: the projects' public API keys.
    class ApiKeys < Resource
      # Mints a public API key (`phk_…`); its +key+ is shown this once. Not retried on
      # 5xx: a repeat would mint a second key.
      def create(project_id, name)
        call("POST", path("projects", project_id, "api-keys"), Models::CreatedKey, body: { name: name },
                                                                                   retry_safe: false)
      end

      # The key stops working at once (the public API answers it 401).
      def revoke(project_id, key_id)
        call("DELETE", path("projects", project_id, "api-keys", key_id), retry_safe: true)
        nil
      end
    end

    # `/projects/{id}/usage`: what a project used per UTC day, for billing.
    class UsageReports < Resource
      # Usage from +since+ to +until+, both UTC days included (`YYYY-MM-DD` strings,
      # Dates, or Times). Defaults: +until+ today, +since+ 29 days before; at most 400
      # days are counted.
      def get(project_id, since: nil, until: nil)
        # `until` is a keyword of Ruby: the argument is read through the binding.
        query = { since: day(since), until: day(binding.local_variable_get(:until)) }
        call("GET", path("projects", project_id, "usage"), Models::Usage, query: query, retry_safe: true)
      end

      private

      def day(value)
        value.respond_to?(:getutc) ? value.getutc.to_date.iso8601 : value&.to_s
      end
    end

    # `/projects/{id}/portal-links`: single-use sign-in links into a project's portal.
    class PortalLinks < Resource
      # A link that signs one of the operator's users (+user_id+, with +email+ and
      # +name+ if given) into the project's portal as `owner`, `member` or `viewer`.
      # +expires_in+: seconds, 1 to 3600 (default 300). Not retried on 5xx.
      def create(project_id, user_id, role, email: UNSET, name: UNSET, expires_in: UNSET)
        body = given(user: given(id: user_id, email: email, name: name), role: role, expires_in: expires_in)
        call("POST", path("projects", project_id, "portal-links"), Models::PortalLink, body: body, retry_safe: false)
      end
    end
  end
end
