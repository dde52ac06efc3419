// Package webhook signs and verifies the webhook POSTs a queuety worker
// sends, as the Standard Webhooks specification (standardwebhooks.com)
// does, so a receiver can tell a real delivery from a forged or replayed
// one.
//
// A signed POST carries three headers:
//
//	webhook-id:        msg_...   unique per POST
//	webhook-timestamp: 1767225600  the send time, in Unix seconds
//	webhook-signature: v1,<base64>  HMAC-SHA256 of "id.timestamp.body"
//
// The HMAC key is the webhook's secret, shown as "whsec_" followed by the
// base64 of the key bytes; queuety generates one for each webhook it
// registers and shows it once (queuety.Client.AddWebhook,
// RotateWebhookSecret). A receiver checks a POST with Verify, on the exact
// body bytes it read, before it parses them. Any Standard Webhooks library
// (for PHP, Python, JavaScript, ...) verifies the same headers.
package webhook

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The headers of a signed POST.
const (
	// HeaderID carries the POST's unique id.
	HeaderID = "webhook-id"
	// HeaderTimestamp carries the send time in Unix seconds.
	HeaderTimestamp = "webhook-timestamp"
	// HeaderSignature carries one or more space-separated signatures,
	// each "v1," followed by the base64 of an HMAC-SHA256.
	HeaderSignature = "webhook-signature"
)

// SecretPrefix starts every secret: "whsec_" and then the base64 of the
// key bytes.
const SecretPrefix = "whsec_"

// DefaultTolerance is how far a POST's timestamp may be from the
// receiver's clock, either way, when Verify is given no tolerance: the
// specification's five minutes. It bounds how long a captured POST can be
// replayed.
const DefaultTolerance = 5 * time.Minute

// Errors Verify returns (wrapped, with what was wrong).
var (
	// ErrMissingHeaders: the POST lacks one of the three headers.
	ErrMissingHeaders = errors.New("webhook: missing signature headers")
	// ErrTimestamp: the timestamp does not parse or is outside the
	// tolerance.
	ErrTimestamp = errors.New("webhook: timestamp outside the tolerance")
	// ErrSignature: no signature in the header matches the body.
	ErrSignature = errors.New("webhook: no matching signature")
	// ErrSecret: the secret is not "whsec_" and base64.
	ErrSecret = errors.New("webhook: malformed secret")
)

// secretBytes is the length of the keys NewSecret makes: 256 bits, the
// the specification recommends 24 to 64.
const secretBytes = 32

// NewSecret returns a new random secret: SecretPrefix and the base64 of 32
// bytes from crypto/rand.
func NewSecret() string {
	key := make([]byte, secretBytes)
	rand.Read(key) // never fails: it crashes the program instead
	return SecretPrefix + base64.StdEncoding.EncodeToString(key)
}

// Sign returns the webhook-signature value for a POST: "v1," and the
// base64 HMAC-SHA256, keyed by secret, of id, the Unix seconds of at and
// body, joined by dots. It fails only when secret is malformed.
func Sign(secret, id string, at time.Time, body []byte) (string, error) {
	key, err := decodeSecret(secret)
	if err != nil {
		return "", err
	}
	return "v1," + base64.StdEncoding.EncodeToString(mac(key, id, at.Unix(), body)), nil
}

// Verify checks a POST's signature headers against body (the raw bytes
// read from the request) with the webhook's secret: the timestamp must be
// within tolerance of now (DefaultTolerance when tolerance is not
// positive), and one of the v1 signatures must match. It returns nil for
// a genuine POST and an error wrapping ErrMissingHeaders, ErrTimestamp,
// ErrSignature or ErrSecret otherwise. The comparison takes constant time.
// A receiver should also drop a webhook-id it has already handled.
func Verify(secret string, header http.Header, body []byte, tolerance time.Duration) error {
	return verify(secret, header, body, tolerance, time.Now())
}

func verify(secret string, header http.Header, body []byte, tolerance time.Duration, now time.Time) error {
	key, err := decodeSecret(secret)
	if err != nil {
		return err
	}
	id, ts, sigs := header.Get(HeaderID), header.Get(HeaderTimestamp), header.Get(HeaderSignature)
	var missing []string
	for _, h := range [][2]string{{HeaderID, id}, {HeaderTimestamp, ts}, {HeaderSignature, sigs}} {
		if h[1] == "" {
			missing = append(missing, h[0])
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: %s", ErrMissingHeaders, strings.Join(missing, ", "))
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: %s %q is not Unix seconds", ErrTimestamp, HeaderTimestamp, ts)
	}
	if tolerance <= 0 {
		tolerance = DefaultTolerance
	}
	if d := now.Sub(time.Unix(sec, 0)); d > tolerance || d < -tolerance {
		return fmt.Errorf("%w: sent %s, %s from now (tolerance %s)", ErrTimestamp,
			time.Unix(sec, 0).UTC().Format(time.RFC3339), d.Round(time.Second), tolerance)
	}
	want := mac(key, id, sec, body)
	for _, s := range strings.Fields(sigs) {
		version, value, ok := strings.Cut(s, ",")
		if !ok || version != "v1" {
			continue
		}
		got, err := base64.StdEncoding.DecodeString(value)
		if err == nil && hmac.Equal(got, want) {
			return nil
		}
	}
	return ErrSignature
}

// mac is the HMAC-SHA256 of "id.unix.body".
func mac(key []byte, id string, unix int64, body []byte) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(id))
	h.Write([]byte{'.'})
	h.Write(strconv.AppendInt(nil, unix, 10))
	h.Write([]byte{'.'})
	h.Write(body)
	return h.Sum(nil)
}

// decodeSecret returns the key bytes of a secret. The error never
// contains the secret.
func decodeSecret(secret string) ([]byte, error) {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, SecretPrefix))
	if err != nil || len(key) == 0 {
		return nil, fmt.Errorf("%w: want %s followed by base64", ErrSecret, SecretPrefix)
	}
	return key, nil
}
