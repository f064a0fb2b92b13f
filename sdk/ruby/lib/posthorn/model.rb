# frozen_string_literal: true

require "date"
require "time"

module Posthorn
  # A typed, frozen answer of the API. Each subclass declares its fields with the JSON
  # type of each, so that decoding and the test suite's check against the OpenAPI
  # documents read the same table. Fields the server adds later are ignored, so an older
  # client keeps working; a field absent from the answer reads as its default.
  class Model
    # One declared field. +type+ is :integer, :string, :boolean, :time (RFC 3339),
    # :date (YYYY-MM-DD), :object (a Hash as sent), :any, a Model subclass, or
    # [:array, type] for a list of them. +null+: whether the value may be nil.
    Field = Struct.new(:name, :type, :null, :default) do
      def decode(value)
        value.nil? ? nil : Model.convert(type, value)
      end
    end

    class << self
      # The fields, by name, the superclass's first.
      def fields
        @fields ||= superclass <= Model ? superclass.fields.dup : {}
      end

      def field(name, type, null: false, default: nil)
        fields[name] = Field.new(name, type, null, default.freeze)
        attr_reader name
      end

      # Builds the model from its JSON object (string keys).
      def from_json(obj)
        raise TypeError, "#{name}: expected a JSON object, got #{obj.class}" unless obj.is_a?(Hash)

        values = fields.each_value.with_object({}) do |f, out|
          key = f.name.to_s
          out[f.name] = f.decode(obj[key]) if obj.key?(key)
        end
        new(**values)
      end

      def convert(type, value)
        case type
        when :time then Time.iso8601(value)
        when :date then Date.iso8601(value)
        when Array then value.map { |item| convert(type[1], item) }
        when Class then type.from_json(value)
        else value
        end
      end
    end

    def initialize(**values)
      unknown = values.keys - self.class.fields.keys
      raise ArgumentError, "unknown field(s) #{unknown.join(", ")} for #{self.class.name}" unless unknown.empty?

      self.class.fields.each_value do |f|
        instance_variable_set(:"@#{f.name}", values.fetch(f.name, f.default))
      end
      freeze
    end

    def to_h
      self.class.fields.keys.to_h { |name| [name, public_send(name)] }
    end

    def ==(other)
      other.instance_of?(self.class) && other.to_h == to_h
    end
    alias eql? ==

    def hash
      [self.class, to_h].hash
    end

    def inspect
      "#<#{self.class.name} #{to_h.map { |k, v| "#{k}=#{v.inspect}" }.join(", ")}>"
    end
    alias to_s inspect
  end

  # One page of a list: resume from next_cursor; fetch again now only if has_more.
  Page = Struct.new(:data, :has_more, :next_cursor, keyword_init: true) do
    alias_method :has_more?, :has_more
  end
end
