package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/pflag"
	"go.yaml.in/yaml/v3"

	"github.com/simclr-go/simclr/train"
)

// A train config file (--config) holds the settings of a run as keys and
// values: YAML (.yaml, .yml) or JSON (.json, so that a run's config.json
// repeats the run). The keys are train's flag names, with - or _ between
// words (config.json's spelling is max_level, the flag's max-level), so
// that defineTrainFlags stays the one map from names to settings; the
// values are written as they would follow the flag (lr: 0.1,
// checkpoint_every: 10m, probe: false).

// configSetting is one key and value of a config file.
type configSetting struct {
	key   string // as written in the file
	flag  string // the train flag it sets ("" for a record key)
	value string // the value as text, as it would follow the flag
	line  int    // line in the file; 0 when not known (JSON)
}

// recordKeys are the keys of config.json that record what a run derived
// (or, for ranks, how it was launched) rather than what was asked for; a
// run given its config.json derives them again, so they are accepted and
// not applied. A test checks that every key of config.json is a flag,
// preset or one of these.
var recordKeys = map[string]bool{
	"version": true, "device_log": true, "train_images": true, "iterations_per_epoch": true,
	"total_iterations": true, "warmup_iterations": true, "resolved_lr": true, "ranks": true,
	// The level law of --level-law measured:FILE, resolved from that file.
	"level_probs": true, "level_draws": true,
	// The plan --estimator auto's pilot made; a run repeated from the file
	// runs its own pilot.
	"auto": true,
}

// presetKey names the preset a file starts from (config.json records it).
const presetKey = "preset"

// readConfigFile reads the settings of a YAML or JSON config file and
// checks every key against train's flags, so that a misspelt key is an
// error naming it and the file, never a setting silently ignored.
func readConfigFile(path string) ([]configSetting, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--config: %w", err)
	}
	var settings []configSetting
	switch ext := strings.ToLower(filepath.Ext(path)); ext {
	case ".yaml", ".yml":
		settings, err = parseYAMLSettings(raw)
	case ".json":
		settings, err = parseJSONSettings(raw)
	default:
		return nil, fmt.Errorf("--config %s: name a .yaml, .yml or .json file (a run's config.json works)", path)
	}
	if err != nil {
		return nil, fmt.Errorf("--config %s: %w", path, err)
	}
	where := func(s configSetting) string {
		if s.line > 0 {
			return fmt.Sprintf("%s, line %d", path, s.line)
		}
		return path
	}
	var scratch train.Settings
	fs := pflag.NewFlagSet("config", pflag.ContinueOnError)
	defineTrainFlags(fs, &scratch)
	seen := map[string]configSetting{}
	for i, s := range settings {
		name := strings.ReplaceAll(s.key, "_", "-")
		switch {
		case s.key == presetKey:
			name = presetKey
		case recordKeys[s.key]:
			continue
		case resumeOnlyFlags[name] || name == "config":
			return nil, fmt.Errorf("%s: %s is not a setting of the run: give --%s on the command line", where(s), s.key, name)
		case fs.Lookup(name) == nil:
			return nil, fmt.Errorf("%s: unknown setting %q%s; the keys are train's flag names (see simclr train --help)",
				where(s), s.key, suggestKey(s.key, fs))
		}
		if prev, dup := seen[name]; dup {
			return nil, fmt.Errorf("%s: %q sets what %q already set (%s)", where(s), s.key, prev.key, where(prev))
		}
		seen[name] = s
		settings[i].flag = name
	}
	return settings, nil
}

// suggestKey returns `, did you mean "x"?` for the flag nearest to key
// (spelt as key spells words), or "" when none is close.
func suggestKey(key string, fs *pflag.FlagSet) string {
	best, bestDist := "", 3 // at most two edits away
	fs.VisitAll(func(f *pflag.Flag) {
		name := f.Name
		if strings.Contains(key, "_") {
			name = strings.ReplaceAll(name, "-", "_")
		}
		if d := editDistance(key, name); d < bestDist {
			best, bestDist = name, d
		}
	})
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			sub := prev[j-1]
			if a[i-1] != b[j-1] {
				sub++
			}
			cur[j] = min(sub, prev[j]+1, cur[j-1]+1)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// parseYAMLSettings reads a YAML mapping of keys to single values.
func parseYAMLSettings(raw []byte) ([]configSetting, error) {
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil // an empty file sets nothing
		}
		return nil, err
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, errors.New("holds more than one YAML document; put every setting in one")
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	if root.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("line %d: want settings as key: value lines (e.g. lr: 0.1)", root.Line)
	}
	var out []configSetting
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		if v.Kind == yaml.AliasNode {
			v = v.Alias
		}
		switch {
		case k.Kind != yaml.ScalarNode:
			return nil, fmt.Errorf("line %d: a key must be a name", k.Line)
		case v.Kind != yaml.ScalarNode:
			return nil, fmt.Errorf("line %d: %s: give one value (a number, word or duration), not a list or a mapping", v.Line, k.Value)
		case v.ShortTag() == "!!null":
			return nil, fmt.Errorf("line %d: %s has no value; give one or remove the line", v.Line, k.Value)
		}
		out = append(out, configSetting{key: k.Value, value: v.Value, line: k.Line})
	}
	return out, nil
}

// parseJSONSettings reads a JSON object of keys to single values (numbers
// kept as written, so that a 64-bit seed survives).
func parseJSONSettings(raw []byte) ([]configSetting, error) {
	var obj map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&obj); err != nil {
		return nil, fmt.Errorf("not a JSON object of settings: %w", err)
	}
	var out []configSetting
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		if recordKeys[k] {
			// Not applied (readConfigFile), whatever its value: a
			// measured level law is a list.
			out = append(out, configSetting{key: k})
			continue
		}
		v := bytes.TrimSpace(obj[k])
		s := string(v)
		switch {
		case len(v) == 0 || s == "null":
			return nil, fmt.Errorf("%s has no value; give one or remove it", k)
		case v[0] == '{' || v[0] == '[':
			return nil, fmt.Errorf("%s: give one value (a number, string or boolean), not an object or a list", k)
		case v[0] == '"':
			if err := json.Unmarshal(v, &s); err != nil {
				return nil, fmt.Errorf("%s: %w", k, err)
			}
		case k == "checkpoint_every":
			// A number is an iteration count from the config.json of an
			// older version; train.Period reads it as that version's
			// config.json is read on resume.
			var p train.Period
			if err := p.UnmarshalJSON(v); err != nil {
				return nil, err
			}
			s = p.String()
		}
		out = append(out, configSetting{key: k, value: s})
	}
	return out, nil
}

// presetOf returns the preset a file names, if any.
func presetOf(settings []configSetting) (string, bool) {
	for _, s := range settings {
		if s.flag == presetKey {
			return s.value, true
		}
	}
	return "", false
}

// applySettings sets the file's settings on c. A file that gives a length
// replaces the length c had (a preset's), whatever its unit.
func applySettings(c *train.Settings, path string, settings []configSetting) error {
	for _, s := range settings {
		if lengthFlags[s.flag] {
			c.Epochs, c.Iterations, c.MaxSamples = 0, 0, 0
			break
		}
	}
	onto := pflag.NewFlagSet("config", pflag.ContinueOnError)
	defineTrainFlags(onto, c)
	for _, s := range settings {
		if s.flag == "" || s.flag == presetKey {
			continue
		}
		if err := onto.Set(s.flag, s.value); err != nil {
			where := path
			if s.line > 0 {
				where = fmt.Sprintf("%s, line %d", path, s.line)
			}
			return fmt.Errorf("%s: %s %q: %v", where, s.key, s.value, err)
		}
	}
	return nil
}
