# frozen_string_literal: true

require_relative "lib/posthorn/version"

Gem::Specification.new do |spec|
  spec.name = "posthorn"
  spec.version = Posthorn::VERSION
  spec.summary = "Verify Posthorn webhooks and call its public and operator APIs"
  spec.description = "Verifies Posthorn deliveries (HMAC v1 and ed25519 v1a Standard Webhooks signatures, " \
                     "X-Botix-Signature) and calls every /public/v1 and /operator/v1 operation with backoff, " \
                     "rate-limit awareness and cursor iteration. Standard library only."
  spec.authors = ["Posthorn"]
  spec.license = "MIT"
  spec.files = Dir.chdir(__dir__) { Dir["lib/**/*.rb", "README.md"] }
  spec.require_paths = ["lib"]
  spec.required_ruby_version = ">= 3.1"
  spec.metadata["rubygems_mfa_required"] = "true"
end
