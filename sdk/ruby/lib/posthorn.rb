# frozen_string_literal: true

# Posthorn: verify webhooks, call the public API with backoff, page through lists, and
# run projects for customers through the operator API. Standard library only.
#
#   require "posthorn"
#   event = Posthorn::Webhook.verify(raw_body, headers, "whsec_…")
#   client = Posthorn::Client.new("phk_…", base_url: "https://posthorn.example.com")
#   op = Posthorn::Operator.new("pho_…", base_url: "https://posthorn.example.com")
module Posthorn
end

require_relative "posthorn/version"
require_relative "posthorn/errors"
require_relative "posthorn/webhook"
require_relative "posthorn/retry_policy"
require_relative "posthorn/transport"
require_relative "posthorn/model"
require_relative "posthorn/models"
require_relative "posthorn/cursor_iterator"
require_relative "posthorn/resource"
require_relative "posthorn/client"
require_relative "posthorn/operator"
