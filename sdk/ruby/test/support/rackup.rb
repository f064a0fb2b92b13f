# frozen_string_literal: true

# Serves a Rack application from a config.ru file through HttpReceiver, as `rackup` would
# (Rack itself is not in the standard library). Usage: ruby -Ilib rackup.rb config.ru PORT
require "stringio"
require_relative "http_receiver"

$stdout.sync = true
config, port = ARGV
app = nil
# What config.ru calls to name its application.
Object.define_method(:run) { |application| app = application }
eval(File.read(config), TOPLEVEL_BINDING, config) # rubocop:disable Security/Eval

HttpReceiver.new(Integer(port)) do |method, path, headers, body|
  env = { "REQUEST_METHOD" => method, "PATH_INFO" => path.split("?").first, "rack.input" => StringIO.new(body) }
  headers.each do |name, value|
    key = name.upcase.tr("-", "_")
    env[%w[CONTENT_TYPE CONTENT_LENGTH].include?(key) ? key : "HTTP_#{key}"] = value
  end
  status, out_headers, out_body = app.call(env)
  [status, out_headers, out_body.to_a.join]
end
trap("TERM") { exit }
sleep
