# frozen_string_literal: true

module Posthorn
  VERSION = "0.1.0"
end
