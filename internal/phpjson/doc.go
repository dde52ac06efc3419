// Package phpjson reads and writes JSON exactly the way PHP does.
//
// Queuety's PHP and Go implementations share the same MySQL rows. Several
// values are hashed over their JSON text: a job's payload_hash and a
// workflow's _definition_hash are SHA-256 digests of PHP's
// json_encode($value, JSON_THROW_ON_ERROR) output. To compute the same hashes,
// and to rewrite rows that PHP wrote (payloads, workflow state, event data)
// without changing bytes nobody touched, the Go side needs an encoder that is
// byte-for-byte compatible with json_encode under its default flags, and a
// decoder that keeps object key order the way a PHP array does.
//
// Differences from encoding/json that matter here:
//
//   - "/" is escaped as "\/" and every non-ASCII character as a lowercase
//     \uXXXX escape (astral characters as a surrogate pair); "<", ">", "&",
//     "'" and DEL are written raw. Invalid UTF-8 is an error, not replaced.
//   - Floats use PHP's serialize_precision=-1 layout: shortest round-trip
//     digits, no ".0" on integral values (1.0 is written 1), and exponential
//     form such as 1.0e+20 or 1.5e-7 outside PHP's fixed-notation range.
//   - An empty array and an empty object are both written as [], and an
//     object whose keys are "0".."n-1" in order is written as a list, because
//     in PHP both are the same array.
//   - Objects decode to *Object, which keeps insertion order like a PHP
//     array; integers decode to int64 so values above 2^53 survive.
//
// Decoding follows PHP's json_decode($text, true): the same strict grammar,
// duplicate keys keep their first position and take the last value, lone
// UTF-16 surrogate escapes and invalid UTF-8 are rejected, integers that do
// not fit in int64 become floats, and nesting deeper than 512 levels (PHP's
// default depth) is an error, as it is when encoding.
package phpjson
