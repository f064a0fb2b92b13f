# frozen_string_literal: true

require "socket"

# A tiny HTTP/1.1 server on loopback for the tests (WEBrick is not in Ruby 3.1's standard
# library): one connection at a time, `Connection: close`, bodies by Content-Length. The
# handler gets (method, path, headers as [name, value] pairs, body) and answers
# [status, headers, body].
class HttpReceiver
  REASONS = { 200 => "OK", 201 => "Created", 202 => "Accepted", 204 => "No Content", 400 => "Bad Request",
              404 => "Not Found", 422 => "Unprocessable Content", 429 => "Too Many Requests",
              500 => "Internal Server Error", 502 => "Bad Gateway", 503 => "Service Unavailable" }.freeze

  attr_reader :port

  def initialize(port = 0, &handler)
    @handler = handler
    @server = TCPServer.new("127.0.0.1", port)
    @port = @server.addr[1]
    @thread = Thread.new { serve }
  end

  def url(path = "")
    "http://127.0.0.1:#{@port}#{path}"
  end

  def stop
    @thread.kill
    @thread.join
    @server.close
  end

  private

  def serve
    loop do
      socket = @server.accept
      begin
        answer(socket)
      rescue StandardError => e
        warn "receiver: #{e.class}: #{e.message}"
      ensure
        socket.close
      end
    end
  end

  def answer(socket)
    line = socket.gets("\r\n") or return
    method, path, = line.split(" ", 3)
    headers = []
    while (header = socket.gets("\r\n")) && header != "\r\n"
      name, value = header.chomp("\r\n").split(":", 2)
      headers << [name, value.to_s.strip]
    end
    length = headers.find { |name, _| name.casecmp?("content-length") }&.last.to_i
    body = length.positive? ? socket.read(length) : +""
    status, out_headers, out_body = @handler.call(method, path, headers, body)
    out_body = out_body.to_s.b
    head = ["HTTP/1.1 #{status} #{REASONS.fetch(status, "Status")}", "Content-Length: #{out_body.bytesize}",
            "Connection: close", *out_headers.map { |name, value| "#{name}: #{value}" }]
    socket.write("#{head.join("\r\n")}\r\n\r\n".b + out_body)
  end
end
