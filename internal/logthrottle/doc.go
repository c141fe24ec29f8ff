// Package logthrottle bounds how fast one kind of log line is written
// (Handler): a peer that can make a server log a line per connection or
// per request (refusals, handshake failures, malformed messages) cannot
// fill the disk with them. Each kind (level and message) passes a burst
// at once, then a steady rate; what is held back is counted and the count
// rides on the next line of that kind ("suppressed").
package logthrottle
