package parse

import (
	"bytes"
	"strings"
)

// SetBy values of an HCCL setting: where the effective value came from.
const (
	SetByEnvironment = "environment"
	SetByDefault     = "default"
	SetByGEOption    = "ge_option"
	SetByUnset       = "unset"
)

// EnvSetting is one variable read from an `[HCCL_ENV]` line.
type EnvSetting struct {
	Name  string // e.g. HCCL_BUFFSIZE
	Value string // as printed inside the brackets, e.g. "200", "3600.00", "AF_INET"
	Unit  string // printed right after the brackets: "M", "s", "KB", "ms" or ""
	SetBy string // one of the SetBy constants
}

var (
	tagHCCLEnv    = []byte("[HCCL_ENV]")
	markEnvConfig = []byte(`Env config "`)
)

var tagEnvVarParam = []byte("[Init][EnvVarParam]")

// IsEnvLine reports whether an HCCL message (the text after the plog
// header, file and tid) may carry settings: it starts with the
// `[HCCL_ENV]` tag (HCCL_RUN_INFO formats begin with it) or the Ascend 950
// `[Init][EnvVarParam]` tag, or it has the older untagged
// `X set by environment to [v]`. It is the hot-path pre-check: two prefix
// tests and one scan.
func IsEnvLine(msg []byte) bool {
	return bytes.HasPrefix(msg, tagHCCLEnv) || bytes.HasPrefix(msg, tagEnvVarParam) ||
		bytes.HasPrefix(msg, prefixHCCLVar) || bytes.HasPrefix(msg, prefixEnvVar) ||
		bytes.HasPrefix(msg, prefixExecTimeOut2023) || containsSetBy(msg)
}

// Untagged settings lines (2023 to 2025) start with the variable's name,
// with "environmental variable " or, in 2023, with "ExecTimeOut is set".
var (
	prefixHCCLVar         = []byte("HCCL_")
	prefixEnvVar          = []byte("environmental variable ")
	prefixExecTimeOut2023 = []byte("ExecTimeOut is set to timeOut[")
)

// containsSetBy is bytes.Contains(msg, " set by ") keyed on the rare 'y':
// bytes.Index keys on the first byte, a space, which costs a call per word.
func containsSetBy(msg []byte) bool {
	for off := 0; ; {
		i := bytes.IndexByte(msg[off:], 'y')
		if i < 0 {
			return false
		}
		i += off
		if i >= 6 && i+1 < len(msg) && msg[i+1] == ' ' && string(msg[i-6:i]) == " set b" {
			return true
		}
		off = i + 1
	}
}

// setByPhrases map the wordings HCOMM externalinput.cc and env_config.cc
// print after a variable name to the source of its value. Longer phrases
// come first so that "set by environment variable to" wins over "set by
// environment to".
var setByPhrases = []struct {
	phrase string
	setBy  string
}{
	{" set by environment variable to ", SetByEnvironment},
	{" set by environment to ", SetByEnvironment},
	{" set by default to ", SetByDefault},
	{" set by GE option to ", SetByGEOption},
	{" is set to default value ", SetByDefault},
	{" is set to ", SetByEnvironment},
}

// notSetDefaults are the phrases after "is not set" that name the default
// then used; the value follows the phrase.
var notSetDefaults = []string{
	"is used by default ",
	"default value is ",
	"default value",
	"default: ",
	"set by default to ",
}

// ParseHCCLEnv extracts the settings of one HCCL message (the text after the
// plog header). It understands every wording of HCOMM at the time of writing:
//
//	[HCCL_ENV] X set by default|environment|GE option to [v]<unit>
//	[HCCL_ENV] X set by environment variable to [v].
//	[HCCL_ENV] X is set to default value [v]<unit>
//	[HCCL_ENV] environmental variable X is set to [v]<unit>
//	[HCCL_ENV] environmental variable X is [v], …
//	[HCCL_ENV] X is set to [v], ip[…].
//	[HCCL_ENV] X is not set[, default value is V.| and is used by default [V]| …]
//	[HCCL_ENV] environmental variable X is empty
//	[HCCL_ENV] X[v], set debugConfig[…]
//	X set by environment to [v]                  (older CANN, no tag)
//	[Init][EnvVarParam]Env config "X" is not set|is parsed   (Ascend 950)
//
// and lines with two settings (`HCCL_INTRA_PCIE_ENABLE set by default to
// [1], HCCL_INTRA_ROCE_ENABLE set by default to [0]`). Only names shaped like
// environment variables (upper case, digits, `_`) are returned, so other
// "set by" messages do not produce settings.
func ParseHCCLEnv(msg []byte) []EnvSetting {
	var out []EnvSetting
	if i := bytes.Index(msg, markEnvConfig); i >= 0 {
		return parseEnvConfig(msg[i+len(markEnvConfig):])
	}
	if bytes.HasPrefix(msg, prefixExecTimeOut2023) {
		// 2023: "ExecTimeOut is set to timeOut[120]" (seconds).
		if v, _, ok := bracketed(string(msg[len(prefixExecTimeOut2023)-1:])); ok {
			return []EnvSetting{{Name: "HCCL_EXEC_TIMEOUT", Value: v, Unit: "s", SetBy: SetByEnvironment}}
		}
		return nil
	}
	tagged := false
	if i := bytes.Index(msg, tagHCCLEnv); i >= 0 {
		tagged = true
		msg = msg[i+len(tagHCCLEnv):]
		// Further tags such as [ParseRetryEnable] or [Parse][X] may follow.
		for len(msg) > 0 && msg[0] == '[' {
			c := bytes.IndexByte(msg, ']')
			if c < 0 {
				break
			}
			msg = msg[c+1:]
		}
	}
	s := string(trimSpaces(msg))
	// The message may hold several "A …, B …" settings; split on ", " only
	// before a new variable name so values with commas survive.
	for _, part := range splitSettings(s) {
		if st, ok := parseOneSetting(part, tagged); ok {
			out = append(out, st)
		}
	}
	return out
}

// splitSettings splits "A set by default to [1], B set by default to [0]"
// into its settings: a new setting starts after ", " when the next word is
// an environment-variable name followed by " set by ".
func splitSettings(s string) []string {
	var parts []string
	start := 0
	for i := 0; i+2 < len(s); i++ {
		if s[i] != ',' || s[i+1] != ' ' {
			continue
		}
		rest := s[i+2:]
		name := envName(rest)
		if name != "" && strings.HasPrefix(rest[len(name):], " set by ") {
			parts = append(parts, s[start:i])
			start = i + 2
		}
	}
	return append(parts, s[start:])
}

// envName returns the environment-variable-shaped word at the start of s.
func envName(s string) string {
	i := 0
	for i < len(s) && (isUpper(s[i]) || isDigit(s[i]) || s[i] == '_') {
		i++
	}
	if i < 2 || !isUpper(s[0]) {
		return ""
	}
	return s[:i]
}

func parseOneSetting(s string, tagged bool) (EnvSetting, bool) {
	s = strings.TrimLeft(s, " ")
	s = strings.TrimPrefix(s, "environmental variable ")
	name := envName(s)
	// An untagged message that starts with the variable's name is a
	// settings line of the 2023–2025 eras, which use every wording the
	// tagged lines use; one with the name further in is read only in the
	// "set by" wording.
	if name != "" {
		tagged = true
	}
	if name == "" {
		// Older untagged lines may carry text before the name:
		// "... HCCL_CONNECT_TIMEOUT set by environment to [300]".
		i := strings.Index(s, " set by ")
		if i < 0 {
			return EnvSetting{}, false
		}
		j := strings.LastIndexAny(s[:i], " ]")
		s = s[j+1:]
		if name = envName(s); name == "" {
			return EnvSetting{}, false
		}
	}
	rest := s[len(name):]
	for _, ph := range setByPhrases {
		if !strings.HasPrefix(rest, ph.phrase) {
			continue
		}
		if !tagged && !strings.HasPrefix(ph.phrase, " set by ") {
			return EnvSetting{}, false // untagged lines only use "set by" wordings
		}
		v, unit, ok := bracketed(rest[len(ph.phrase):])
		if !ok {
			return EnvSetting{}, false
		}
		return EnvSetting{Name: name, Value: v, Unit: unit, SetBy: ph.setBy}, true
	}
	if !tagged {
		return EnvSetting{}, false
	}
	switch {
	case strings.HasPrefix(rest, " is set, "):
		// 2023: "environmental variable HCCL_CONNECT_TIMEOUT is set, timeOut[600]" (seconds).
		i := strings.Index(rest, "timeOut[")
		if i < 0 {
			return EnvSetting{}, false
		}
		v, _, ok := bracketed(rest[i+len("timeOut"):])
		if !ok {
			return EnvSetting{}, false
		}
		return EnvSetting{Name: name, Value: v, Unit: "s", SetBy: SetByEnvironment}, true
	case strings.HasPrefix(rest, " is not set") || strings.HasPrefix(rest, " and GE profiling option is not set"):
		st := EnvSetting{Name: name, SetBy: SetByUnset}
		tail := rest[strings.Index(rest, " is not set")+len(" is not set"):]
		for _, ph := range notSetDefaults {
			i := strings.Index(tail, ph)
			if i < 0 {
				continue
			}
			after := strings.TrimLeft(tail[i+len(ph):], " ")
			if ph == "default value" && !strings.HasPrefix(after, "[") {
				continue // "default value MaxCnt is [1], …" names several values
			}
			st.Value, st.Unit = defaultAfter(after)
			break
		}
		return st, true
	case strings.HasPrefix(rest, " is empty"):
		return EnvSetting{Name: name, SetBy: SetByUnset}, true
	case strings.HasPrefix(rest, " is ["):
		// environmental variable HCCL_OP_EXPANSION_MODE is [HOST], aicpuUnfold[0], …
		v, unit, ok := bracketed(rest[len(" is "):])
		if !ok {
			return EnvSetting{}, false
		}
		return EnvSetting{Name: name, Value: v, Unit: unit, SetBy: SetByEnvironment}, true
	case strings.HasPrefix(rest, "["):
		// HCCL_DEBUG_CONFIG[%s], set debugConfig[0x…]
		v, _, ok := bracketed(rest)
		if !ok {
			return EnvSetting{}, false
		}
		return EnvSetting{Name: name, Value: v, SetBy: SetByEnvironment}, true
	}
	return EnvSetting{}, false
}

// bracketed reads "[v]unit" at the start of s.
func bracketed(s string) (value, unit string, ok bool) {
	if !strings.HasPrefix(s, "[") {
		return "", "", false
	}
	end := strings.IndexByte(s, ']')
	if end < 0 {
		return "", "", false
	}
	value = s[1:end]
	rest := s[end+1:]
	i := 0
	for i < len(rest) && i < 3 && (rest[i] >= 'A' && rest[i] <= 'Z' || rest[i] >= 'a' && rest[i] <= 'z') {
		i++
	}
	if i < len(rest) && isAlnum(rest[i]) {
		i = 0 // a longer word is not a unit
	}
	return value, rest[:i], true
}

// defaultAfter reads the default printed after "default value is ",
// "by default [", "default value[" …: a bracketed value or a bare word.
func defaultAfter(s string) (value, unit string) {
	s = strings.TrimLeft(s, " ")
	if v, u, ok := bracketed(s); ok {
		return v, u
	}
	i := 0
	for i < len(s) && s[i] != ' ' && s[i] != ',' && s[i] != '.' && s[i] != ';' && s[i] != '!' {
		i++
	}
	return s[:i], ""
}

// parseEnvConfig reads the Ascend 950 form after `Env config "`:
// `X" is not set. Default value is used.` or `X" is parsed.`.
func parseEnvConfig(b []byte) []EnvSetting {
	q := bytes.IndexByte(b, '"')
	if q <= 0 {
		return nil
	}
	name := envName(string(b[:q]))
	if name == "" || len(name) != q {
		return nil
	}
	rest := b[q+1:]
	switch {
	case bytes.HasPrefix(rest, []byte(" is not set")):
		return []EnvSetting{{Name: name, SetBy: SetByUnset}}
	case bytes.HasPrefix(rest, []byte(" is parsed")):
		return []EnvSetting{{Name: name, SetBy: SetByEnvironment}}
	}
	return nil
}
