# frozen_string_literal: true

require_relative "test_helper"

# The client's models and operations against the server's own OpenAPI documents: every
# field with its JSON type and nullability, every operation called by some method.
class OpenapiTest < Minitest::Test
  include ServerTestHelpers

  PUBLIC_MODELS = {
    "Webhook" => Posthorn::Models::Webhook, "ClientCertificateOut" => Posthorn::Models::ClientCertificate,
    "EventAccepted" => Posthorn::Models::EventAccepted, "Event" => Posthorn::Models::Event,
    "FilteredOut" => Posthorn::Models::FilteredOut, "Delivery" => Posthorn::Models::Delivery,
    "DeliveryDetail" => Posthorn::Models::DeliveryDetail, "Replay" => Posthorn::Models::Replay,
    "Erasure" => Posthorn::Models::Erasure, "EventTypeSchema" => Posthorn::Models::EventTypeSchema,
    "Destination" => Posthorn::Models::Destination, "ListenSession" => Posthorn::Models::ListenSession
  }.freeze
  OPERATOR_MODELS = {
    "Project" => Posthorn::Models::Project, "EffectiveLimits" => Posthorn::Models::EffectiveLimits,
    "BrandOut" => Posthorn::Models::Brand, "CreatedKey" => Posthorn::Models::CreatedKey,
    "Usage" => Posthorn::Models::Usage, "UsageDay" => Posthorn::Models::UsageDay,
    "AttemptCounts" => Posthorn::Models::AttemptCounts, "PortalLink" => Posthorn::Models::PortalLink
  }.freeze
  FIELD_TYPES = { integer: "integer", string: "string", boolean: "boolean", time: "date-time", date: "date",
                  object: "object", any: "any" }.freeze

  # Stands in for the transport: notes the call, then stops it (nothing is sent).
  class Recorder
    Recorded = Class.new(StandardError)
    attr_reader :calls

    def initialize
      @calls = []
    end

    def timeout = 30.0

    def request(method, path, **)
      @calls << [method, path]
      raise Recorded
    end
  end

  def document(path) = TestHelper.openapi(base_url, path)

  def schema_named(doc, name) = doc.dig("components", "schemas", name) || flunk("no schema #{name}")

  def ref_name(schema) = schema["$ref"]&.split("/")&.last

  # [properties, required] of a schema, following $ref and allOf.
  def properties(doc, schema)
    return properties(doc, schema_named(doc, ref_name(schema))) if schema["$ref"]

    props = (schema["properties"] || {}).dup
    required = schema["required"] || []
    (schema["allOf"] || []).each do |part|
      p, r = properties(doc, part)
      props.merge!(p)
      required |= r
    end
    [props, required]
  end

  # The JSON types a property allows ("any" for no constraint), formats as types.
  def json_types(doc, prop)
    return json_types(doc, schema_named(doc, ref_name(prop))) if prop["$ref"]
    return prop["oneOf"].map { |p| json_types(doc, p) }.reduce(:|) if prop["oneOf"]
    return ["any"] unless prop["type"]

    Array(prop["type"]).map { |t| t == "string" && %w[date date-time].include?(prop["format"]) ? prop["format"] : t }
  end

  def field_types(field)
    base = case field.type
           when Array then "array"
           when Class then "object"
           else FIELD_TYPES.fetch(field.type)
           end
    field.null ? [base, "null"] : [base]
  end

  # The model a property names, directly, through oneOf, or as its items.
  def named_models(prop, models)
    direct = [prop, *prop["oneOf"]].filter_map { |p| models[ref_name(p)] }
    items = prop["items"] && models[ref_name(prop["items"])]
    [direct, items]
  end

  def assert_models_match(doc, models)
    models.each do |name, model|
      props, required = properties(doc, { "$ref" => "#/components/schemas/#{name}" })
      assert_equal props.keys.sort, model.fields.keys.map(&:to_s).sort, name
      props.each do |key, prop|
        field = model.fields.fetch(key.to_sym)
        expected = json_types(doc, prop)
        expected |= ["null"] unless required.include?(key) # an absent field reads as nil
        assert_equal expected.sort, field_types(field).sort, "#{name}.#{key}"
        direct, items = named_models(prop, models)
        direct.each { |m| assert_equal m, field.type, "#{name}.#{key}" }
        assert_equal [:array, items], field.type, "#{name}.#{key}" if items
      end
    end
  end

  # The (METHOD, documented path) pairs of a document, paths without the API's prefix.
  def operations(doc, prefix)
    doc.fetch("paths").flat_map do |path, item|
      (item.keys - ["parameters"]).map { |method| [method.upcase, path.delete_prefix(prefix)] }
    end
  end

  # The documented operations that the recorded calls hit, failing on a call none covers.
  def covered(recorded, documented)
    recorded.map do |method, path|
      match = documented.find do |m, template|
        m == method && path.match?(Regexp.new("\\A#{template.gsub(/\{[^}]+\}/, "[^/]+")}\\z"))
      end
      match || flunk("#{method} #{path} is not in the document")
    end.uniq
  end

  def record(resource_class, recorder)
    resource = resource_class.new(recorder)
    ->(name, *args, **kwargs) { assert_raises(Recorder::Recorded) { resource.public_send(name, *args, **kwargs) } }
  end

  def test_the_public_models_match_the_openapi_document
    doc = document("/public/v1/openapi.json")
    assert_models_match(doc, PUBLIC_MODELS)
    # Page(data, has_more, next_cursor) is the envelope {data, meta{next_cursor, has_more}}.
    %w[EventPage DeliveryPage].each do |page|
      props, required = properties(doc, { "$ref" => "#/components/schemas/#{page}" })
      assert_equal [%w[data meta]] * 2, [props.keys.sort, required.sort]
      meta, = properties(doc, props["meta"])
      assert_equal Posthorn::Page.members.map(&:to_s).sort, (["data"] + meta.keys).sort
    end
  end

  def test_every_public_operation_is_called_by_the_client
    recorder = Recorder.new
    webhooks = record(Posthorn::Webhooks, recorder)
    [[:create, "https://x.test", ["*"]], [:list], [:get, 1], [:update, 1, { description: "x" }], [:delete, 1],
     [:rotate_secret, 1], [:recover, 1, { since: "2026-11-30T00:00:00Z" }]].each { |c| call_with(webhooks, c) }
    events = record(Posthorn::Events, recorder)
    [[:send, "a.b", {}], [:send_batch, [{ event: "a.b", data: {} }]], [:get, "evt_1"], [:erase_data, "evt_1"],
     [:list]].each { |c| call_with(events, c) }
    deliveries = record(Posthorn::Deliveries, recorder)
    [[:list], [:get, 1], [:retry, 1]].each { |c| call_with(deliveries, c) }
    replays = record(Posthorn::Replays, recorder)
    [[:get, 1], [:cancel, 1]].each { |c| call_with(replays, c) }
    erasures = record(Posthorn::Erasures, recorder)
    [[:create, "user:1"], [:get, 1]].each { |c| call_with(erasures, c) }
    schemas = record(Posthorn::EventTypes, recorder)
    [[:set_schema, "a.b", {}], [:get_schema, "a.b"], [:delete_schema, "a.b"]].each { |c| call_with(schemas, c) }
    call_with(record(Posthorn::Listen, recorder), [:open, "http://localhost:8000/x"])

    documented = operations(document("/public/v1/openapi.json"), "/public/v1")
    documented -= [["GET", "/openapi.json"]] # the document itself
    assert_equal documented.sort, covered(recorder.calls, documented).sort
  end

  def test_the_operator_models_match_the_openapi_document
    doc = document("/operator/v1/openapi.json")
    assert_models_match(doc, OPERATOR_MODELS)
    # Page(data, has_more, next_cursor) is the envelope {data, next_cursor, has_more}.
    listing = doc.dig("paths", "/projects", "get", "responses", "200", "content", "application/json", "schema")
    props, = properties(doc, listing)
    assert_equal Posthorn::Page.members.map(&:to_s).sort, props.keys.sort
  end

  def test_every_operator_operation_is_called_by_the_client
    recorder = Recorder.new
    projects = record(Posthorn::Operator::Projects, recorder)
    [[:create, "n"], [:list], [:get, 1], [:update, 1, { name: "n" }], [:delete, 1]].each { |c| call_with(projects, c) }
    keys = record(Posthorn::Operator::ApiKeys, recorder)
    [[:create, 1, "n"], [:revoke, 1, 2]].each { |c| call_with(keys, c) }
    call_with(record(Posthorn::Operator::UsageReports, recorder), [:get, 1])
    call_with(record(Posthorn::Operator::PortalLinks, recorder), [:create, 1, "user-1", "member"])

    documented = operations(document("/operator/v1/openapi.json"), "/operator/v1")
    documented -= [["GET", "/openapi.json"]]
    assert_equal documented.sort, covered(recorder.calls, documented).sort
  end

  private

  # [name, *args, {keywords}] as a call through a recorder.
  def call_with(recorded, call)
    name, *args = call
    kwargs = args.last.is_a?(Hash) && args.last.keys.all?(Symbol) && !args.last.empty? ? args.pop : {}
    recorded.call(name, *args, **kwargs)
  end
end
