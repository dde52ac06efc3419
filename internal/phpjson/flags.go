package phpjson

// Flags are the json_encode options MarshalWith understands, with PHP's
// values.
type Flags int

// UnescapedSlashes is PHP's JSON_UNESCAPED_SLASHES: "/" is written as is
// instead of "\/".
const UnescapedSlashes Flags = 64

// MarshalWith encodes v like PHP's json_encode($v, JSON_THROW_ON_ERROR |
// flags). Flags it does not know are ignored.
func MarshalWith(v any, flags Flags) ([]byte, error) {
	e := encoder{buf: make([]byte, 0, 256), rawSlash: flags&UnescapedSlashes != 0}
	if err := e.value(v); err != nil {
		return nil, err
	}
	return e.buf, nil
}
