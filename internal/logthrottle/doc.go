// Package logthrottle bounds how fast one kind of log line is written
// (Handler): a peer that can make a server log a line per connection or
// per request (refusals, handshake failures, malformed messages) cannot
// fill the disk with them. Each kind (level, message and the values of
// chosen attributes) passes a burst at once, then a steady rate; what is
// held back is counted, and the count rides on the next line of that kind
// ("suppressed") or on a summary line once the kind has gone quiet or when
// the handler is flushed. Lines an Exempt attribute marks (an authorized
// caller's, an administrator's) are never held back.
package logthrottle
