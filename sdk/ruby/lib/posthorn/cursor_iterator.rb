# frozen_string_literal: true

module Posthorn
  # The items of every page in turn, fetched as they are needed (Enumerable; #each
  # without a block answers an Enumerator). #cursor is where the pages read so far end:
  # store it and pass it to `iter(cursor: …)` later to go on from there. One pass only,
  # like the cursor it follows: a second #each goes on where the first stopped.
  class CursorIterator
    include Enumerable

    attr_reader :cursor

    # +fetch+ takes a cursor (nil: the beginning) and answers a Page.
    def initialize(cursor = nil, &fetch)
      @fetch = fetch
      @cursor = cursor
      @buffer = []
      @done = false
    end

    def each
      return to_enum(:each) unless block_given?

      loop do
        while @buffer.empty?
          return self if @done

          page = @fetch.call(@cursor)
          @buffer = page.data.dup
          @cursor = page.next_cursor
          @done = !page.has_more
        end
        yield @buffer.shift
      end
    end
  end
end
