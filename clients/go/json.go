package alertsbloom

import (
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Number is a JSON number kept as its text, so that 12345678901234567890
// and 1e400 hash as jsonb stores them (a float64 cannot hold them).
type Number string

// Object is a JSON object as jsonb keeps it: a repeated key keeps its last
// value. Keys holds each key once, in the order first seen.
type Object struct {
	Keys   []string
	Values map[string]any
}

// The deepest nesting the parser follows; deeper than any value the server
// can index (128 containers are refused), it bounds the recursion.
const maxParseDepth = 1000

var numberPattern = regexp.MustCompile(`^-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?`)

type parser struct {
	text string
	i    int
	what string
}

// ParseJSON parses JSON text strictly (RFC 8259, as PostgreSQL's jsonb
// input reads it) into nil, bool, string, Number, []any and *Object.
func ParseJSON(text, what string) (any, error) {
	if !utf8.ValidString(text) {
		return nil, errorf("%s is not valid UTF-8", what)
	}
	p := &parser{text: text, what: what}
	v, err := p.value(0)
	if err != nil {
		return nil, err
	}
	p.ws()
	if p.i != len(p.text) {
		return nil, p.fail("text after the value")
	}
	return v, nil
}

func (p *parser) fail(msg string) error {
	return errorf("%s is not valid JSON: %s at character %d", p.what, msg, p.i+1)
}

func (p *parser) ws() {
	for p.i < len(p.text) {
		switch p.text[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *parser) peek() byte {
	if p.i < len(p.text) {
		return p.text[p.i]
	}
	return 0
}

func hex4(s string) (rune, bool) {
	if len(s) < 4 {
		return 0, false
	}
	u, err := strconv.ParseUint(s[:4], 16, 32)
	if err != nil || strings.ContainsAny(s[:4], "+-") {
		return 0, false
	}
	return rune(u), true
}

func (p *parser) str() (string, error) {
	p.i++ // the opening quote
	var out strings.Builder
	for {
		if p.i >= len(p.text) {
			return "", p.fail("an unterminated string")
		}
		c := p.text[p.i]
		if c == '"' {
			p.i++
			return out.String(), nil
		}
		if c < 0x20 {
			return "", p.fail("a control character inside a string")
		}
		if c != '\\' {
			out.WriteByte(c)
			p.i++
			continue
		}
		if p.i+1 >= len(p.text) {
			return "", p.fail("an unterminated string")
		}
		e := p.text[p.i+1]
		p.i += 2
		switch e {
		case '"':
			out.WriteByte('"')
		case '\\':
			out.WriteByte('\\')
		case '/':
			out.WriteByte('/')
		case 'b':
			out.WriteByte('\b')
		case 'f':
			out.WriteByte('\f')
		case 'n':
			out.WriteByte('\n')
		case 'r':
			out.WriteByte('\r')
		case 't':
			out.WriteByte('\t')
		case 'u':
			u, ok := hex4(p.text[p.i:])
			if !ok {
				return "", p.fail(`a \u escape without four hex digits`)
			}
			p.i += 4
			switch {
			case u == 0:
				return "", errorf(`%s: \u0000 cannot be stored in jsonb`, p.what)
			case u >= 0xd800 && u <= 0xdbff:
				rest := p.text[p.i:]
				var low rune
				ok := len(rest) >= 6 && rest[0] == '\\' && rest[1] == 'u'
				if ok {
					low, ok = hex4(rest[2:])
				}
				if !ok || low < 0xdc00 || low > 0xdfff {
					return "", errorf("%s: a Unicode high surrogate must be followed by a low surrogate", p.what)
				}
				out.WriteRune(0x10000 + (u-0xd800)<<10 + (low - 0xdc00))
				p.i += 6
			case u >= 0xdc00 && u <= 0xdfff:
				return "", errorf("%s: a Unicode low surrogate must follow a high surrogate", p.what)
			default:
				out.WriteRune(u)
			}
		default:
			p.i--
			return "", p.fail("an unknown escape")
		}
	}
}

func (p *parser) value(depth int) (any, error) {
	if depth > maxParseDepth {
		return nil, errorf("%s: a nested value is too deep to index; values nested more than 127 levels deep are not supported", p.what)
	}
	p.ws()
	c := p.peek()
	switch {
	case c == '{':
		p.i++
		o := &Object{Values: map[string]any{}}
		p.ws()
		if p.peek() == '}' {
			p.i++
			return o, nil
		}
		for {
			p.ws()
			if p.peek() != '"' {
				return nil, p.fail("an object key that is not a string")
			}
			k, err := p.str()
			if err != nil {
				return nil, err
			}
			p.ws()
			if p.peek() != ':' {
				return nil, p.fail("a missing ':'")
			}
			p.i++
			v, err := p.value(depth + 1)
			if err != nil {
				return nil, err
			}
			if _, seen := o.Values[k]; !seen {
				o.Keys = append(o.Keys, k)
			}
			o.Values[k] = v // the last of repeated keys wins
			p.ws()
			switch p.peek() {
			case ',':
				p.i++
				continue
			case '}':
				p.i++
				return o, nil
			}
			return nil, p.fail("a missing ',' or '}'")
		}
	case c == '[':
		p.i++
		a := []any{}
		p.ws()
		if p.peek() == ']' {
			p.i++
			return a, nil
		}
		for {
			v, err := p.value(depth + 1)
			if err != nil {
				return nil, err
			}
			a = append(a, v)
			p.ws()
			switch p.peek() {
			case ',':
				p.i++
				continue
			case ']':
				p.i++
				return a, nil
			}
			return nil, p.fail("a missing ',' or ']'")
		}
	case c == '"':
		return p.str()
	case strings.HasPrefix(p.text[p.i:], "true"):
		p.i += 4
		return true, nil
	case strings.HasPrefix(p.text[p.i:], "false"):
		p.i += 5
		return false, nil
	case strings.HasPrefix(p.text[p.i:], "null"):
		p.i += 4
		return nil, nil
	case c == '-' || (c >= '0' && c <= '9'):
		m := numberPattern.FindString(p.text[p.i:])
		if m == "" || m == "-" {
			return nil, p.fail("a malformed number")
		}
		p.i += len(m)
		return Number(m), nil
	case p.i >= len(p.text):
		return nil, p.fail("an unexpected end")
	}
	r, _ := utf8.DecodeRuneInString(p.text[p.i:])
	return nil, p.fail("an unexpected '" + string(r) + "'")
}
