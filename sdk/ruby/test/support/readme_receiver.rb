# frozen_string_literal: true

require "fileutils"
require "open3"
require "tmpdir"

# The README's Rack receiver, run as its own process by support/rackup.rb, its stdout
# collected line by line.
class ReadmeReceiver
  README = File.expand_path("../../README.md", __dir__)
  RACKUP = File.expand_path("rackup.rb", __dir__)
  LIB = File.expand_path("../../lib", __dir__)

  # The config.ru exactly as the README shows it.
  def self.config_ru
    File.read(README).scan(/```ruby\n(.*?)```/m).flatten.find { |block| block.include?("run(lambda") } ||
      raise("the README has no Rack receiver")
  end

  attr_reader :lines

  def initialize(secret, port)
    @dir = Dir.mktmpdir("posthorn-ruby-receiver")
    File.write(File.join(@dir, "config.ru"), self.class.config_ru)
    env = { "POSTHORN_WEBHOOK_SECRET" => secret }
    @stdin, @stdout, @wait = Open3.popen2e(env, RbConfig.ruby, "-I#{LIB}", RACKUP, "config.ru", port.to_s, chdir: @dir)
    @lines = []
    @reader = Thread.new { @stdout.each_line { |line| @lines << line.strip } }
    TestHelper.wait_for("the receiver", timeout: 20) { listening?(port) }
  end

  def handled(event_id)
    @lines.select { |line| line.start_with?("handled ") && line.end_with?(event_id) }
  end

  def stop
    Process.kill("TERM", @wait.pid)
    @wait.join(10)
    @reader.join(5)
    FileUtils.remove_entry(@dir)
  end

  private

  def listening?(port)
    raise "the receiver exited: #{@lines.join("\n")}" unless @wait.alive?

    TCPSocket.new("127.0.0.1", port).close
    true
  rescue SystemCallError
    false
  end
end
