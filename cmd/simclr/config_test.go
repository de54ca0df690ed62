package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/simclr-go/simclr/contrastive"
	"github.com/simclr-go/simclr/runfolder"
	"github.com/simclr-go/simclr/train"
)

// trainFlagSet is train's command-line flag set, parsed from args.
func trainFlagSet(t *testing.T, args ...string) (*pflag.FlagSet, train.Settings, string, string) {
	t.Helper()
	cfg := train.Defaults()
	fs := pflag.NewFlagSet("train", pflag.ContinueOnError)
	defineTrainFlags(fs, &cfg)
	preset := fs.String("preset", "", "")
	config := fs.String("config", "", "")
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return fs, cfg, *preset, *config
}

// resolveWith resolves train's settings from args (which may name a
// --config file).
func resolveWith(t *testing.T, args ...string) (train.Settings, error) {
	t.Helper()
	fs, cfg, preset, config := trainFlagSet(t, args...)
	return resolveTrainConfig(fs, cfg, preset, config)
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// Every key of config.json is one a config file accepts: a train flag
// (max_level for --max-level) or the preset (train.Settings), or a record
// of what the run derived (train.RunPlan); every setting flag is a key of
// config.json. So a run's config.json sets every setting of the run.
func TestConfigKeysCoverConfigJSON(t *testing.T) {
	fs, _, _, _ := trainFlagSet(t)
	jsonKeys := map[string]bool{}
	for _, typ := range []reflect.Type{reflect.TypeOf(train.Settings{}), reflect.TypeOf(train.RunPlan{})} {
		plan := typ == reflect.TypeOf(train.RunPlan{})
		for i := range typ.NumField() {
			name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
			if name == "" || name == "-" {
				continue
			}
			if jsonKeys[name] {
				t.Errorf("config.json key %s is in train.Settings and train.RunPlan", name)
			}
			jsonKeys[name] = true
			flag := strings.ReplaceAll(name, "_", "-")
			if !plan && fs.Lookup(flag) == nil && name != presetKey {
				t.Errorf("config.json key %s of train.Settings is neither a train flag (--%s) nor the preset", name, flag)
			}
			if plan != recordKeys[name] {
				t.Errorf("config.json key %s: in train.RunPlan %v, a record key %v", name, plan, recordKeys[name])
			}
		}
	}
	for name := range recordKeys {
		if !jsonKeys[name] {
			t.Errorf("record key %s is not a key of config.json", name)
		}
	}
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Name == "preset" || f.Name == "config" {
			return
		}
		if key := strings.ReplaceAll(f.Name, "-", "_"); !jsonKeys[key] {
			t.Errorf("--%s is not saved in config.json (as %s)", f.Name, key)
		}
	})
}

// A config.json as the trainer writes it, read back through --config,
// resolves to the settings it was written from, with every setting away
// from its default (a 64-bit seed, a duration, false booleans, a preset),
// and the record keys recomputed rather than applied.
func TestConfigJSONRoundTrip(t *testing.T) {
	for _, base := range []train.Settings{train.Defaults(), train.Quick()} {
		c := base
		c.Dataset, c.DataDir, c.TrainSubset, c.TestSubset = "folder:/data/photos", "/data", 1234, 56
		c.Estimator, c.MinLevel, c.MaxLevel, c.B, c.C, c.VMLMCN = "vr-rtmlmc", 2, 6, 1.25, 0.75, 3.5
		c.NL, c.D1, c.D2, c.QE, c.Halves, c.MaxServable = 2, 3, 4, 5, contrastive.HalvesSeparate.String(), 8
		c.Epochs, c.Iterations, c.MaxSamples = 0, 0, 1<<40
		c.Optimizer, c.LR, c.Momentum, c.WeightDecay, c.WarmupEpochs, c.Temperature = "lars", 0.123456789, 0.8, 1e-6, 0.25, 0.2
		c.Width, c.ProjDim, c.Seed, c.Norm, c.Augment = 0.25, 64, 1<<63+12345, "group", "paper"
		c.Device, c.Precision, c.Workers, c.Dist, c.DistAddr = "cpu", "fp32", 3, "none", "10.0.0.1:29500"
		c.Out, c.EvalEvery, c.KNNK, c.LogEvery = "runs/x", 2, 20, 5
		c.CheckpointEvery = train.Period(90 * time.Second)
		c.PreciseBN, c.ValSplit, c.Probe, c.ProbeBaseline = false, 500, false, !base.ProbeBaseline
		want := c
		// What the trainer adds for the record: config.json is the
		// settings and the plan, flat.
		plan := train.RunPlan{Version: "simclr 0.0.1", DeviceLog: "device cpu", TrainImages: 1000, ItersPerEpoch: 16,
			TotalIters: 80, WarmupIters: 4, LR: 0.5, Ranks: 2, LevelDraws: []int{4, 2, 1}}
		record := struct {
			train.Settings
			train.RunPlan
		}{c, plan}

		path := filepath.Join(t.TempDir(), runfolder.ConfigFile)
		if err := runfolder.WriteJSON(path, record); err != nil {
			t.Fatal(err)
		}
		got, err := resolveWith(t, "--config", path)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("preset %q: config.json resolves to\n%+v\nwant\n%+v", base.Preset, got, want)
		}
	}
}

// Precedence: defaults, then the preset (the flag's, else the file's),
// then the file, then the flags given; a length from the file or the
// flags replaces the one before it. Keys take either word separator.
func TestConfigFilePrecedence(t *testing.T) {
	yamlFile := writeFile(t, "run.yaml", "# a run\nmax_level: 5\nlr: 0.3\nepochs: 2\nestimator: rtmlmc\ncheckpoint-every: 5m\nprobe: false\n")
	quickFile := writeFile(t, "quick.yml", "preset: quick\nepochs: 3\nseed: 18446744073709551615\n")
	// checkpoint_every 500: an iteration count, from an older config.json.
	jsonFile := writeFile(t, "run.json", `{"max_level": 4, "iterations": 9, "precise_bn": false, "dataset": "svhn", "checkpoint_every": 500}`)
	empty := writeFile(t, "empty.yaml", "")
	d, q := train.Defaults(), train.Quick()
	for _, tc := range []struct {
		args           []string
		maxLevel       int
		lr, width      float64
		epochs, iters  int
		estimator      string
		probe, precise bool
		seed           uint64
		preset         string
	}{
		{[]string{"--config", yamlFile}, 5, 0.3, d.Width, 2, 0, "rtmlmc", false, true, d.Seed, ""},
		{[]string{"--config", yamlFile, "--lr", "0.1", "--iterations", "7"}, 5, 0.1, d.Width, 0, 7, "rtmlmc", false, true, d.Seed, ""},
		{[]string{"--probe", "--config", yamlFile, "--max-level", "3"}, 3, 0.3, d.Width, 2, 0, "rtmlmc", true, true, d.Seed, ""},
		{[]string{"--config", quickFile}, q.MaxLevel, q.LR, q.Width, 3, 0, q.Estimator, q.Probe, true, 1<<64 - 1, "quick"},
		{[]string{"--config", quickFile, "--width", "0.25", "--max-samples", "100"}, q.MaxLevel, q.LR, 0.25, 0, 0, q.Estimator, q.Probe, true, 1<<64 - 1, "quick"},
		{[]string{"--config", quickFile, "--preset", ""}, d.MaxLevel, d.LR, d.Width, 3, 0, d.Estimator, d.Probe, true, 1<<64 - 1, ""},
		{[]string{"--config", jsonFile}, 4, d.LR, d.Width, 0, 9, d.Estimator, d.Probe, false, d.Seed, ""},
		{[]string{"--config", empty, "--iterations", "2"}, d.MaxLevel, d.LR, d.Width, 0, 2, d.Estimator, d.Probe, true, d.Seed, ""},
	} {
		got, err := resolveWith(t, tc.args...)
		if err != nil {
			t.Errorf("%v: %v", tc.args, err)
			continue
		}
		if got.MaxLevel != tc.maxLevel || got.LR != tc.lr || got.Width != tc.width || got.Epochs != tc.epochs ||
			got.Iterations != tc.iters || got.Estimator != tc.estimator || got.Probe != tc.probe ||
			got.PreciseBN != tc.precise || got.Seed != tc.seed || got.Preset != tc.preset {
			t.Errorf("%v: resolved max level %d, lr %g, width %g, epochs %d, iterations %d, %s, probe %v, precise BN %v, seed %d, preset %q",
				tc.args, got.MaxLevel, got.LR, got.Width, got.Epochs, got.Iterations, got.Estimator, got.Probe, got.PreciseBN, got.Seed, got.Preset)
		}
		if tc.args[1] == yamlFile && got.CheckpointEvery != train.Period(5*time.Minute) {
			t.Errorf("%v: checkpoint every %s, want 5m", tc.args, got.CheckpointEvery)
		}
		if tc.args[1] == jsonFile && (got.Dataset != "svhn" || got.CheckpointEvery != d.CheckpointEvery) {
			t.Errorf("%v: dataset %s, checkpoint every %s; want svhn, %s", tc.args, got.Dataset, got.CheckpointEvery, d.CheckpointEvery)
		}
		if got.MaxSamples != 0 && (got.Epochs != 0 || got.Iterations != 0) {
			t.Errorf("%v: two lengths: %+v", tc.args, got)
		}
	}
}

// A key that is not a setting is an error naming the key, the file and
// (YAML) the line, with the nearest key when one is close; so are values
// that are not values, and files that are not settings.
func TestConfigFileErrors(t *testing.T) {
	for _, tc := range []struct {
		name, file, content string
		want                []string
	}{
		{"misspelt key", "a.yaml", "lr: 0.1\nmax_levle: 3\n", []string{`unknown setting "max_levle"`, "line 2", `did you mean "max_level"`}},
		{"misspelt flag spelling", "a.yaml", "max-levle: 3\n", []string{`unknown setting "max-levle"`, `did you mean "max-level"`}},
		{"unknown JSON key", "a.json", `{"lr": 0.1, "learning_rate": 0.2}`, []string{`unknown setting "learning_rate"`}},
		{"bad value", "a.yaml", "epochs: 2\nlr: fast\n", []string{"line 2", `lr "fast"`}},
		{"bad JSON value", "a.json", `{"max_level": "nine"}`, []string{`max_level "nine"`}},
		{"no value", "a.yaml", "lr:\n", []string{"lr has no value"}},
		{"null JSON value", "a.json", `{"lr": null}`, []string{"lr has no value"}},
		{"list value", "a.yaml", "max_level: [1, 2]\n", []string{"max_level: give one value"}},
		{"object JSON value", "a.json", `{"lr": {"base": 1}}`, []string{"lr: give one value"}},
		{"command-line option", "a.yaml", "no_progress: true\n", []string{"no_progress is not a setting", "--no-progress"}},
		{"set twice", "a.yaml", "max_level: 3\nmax-level: 4\n", []string{`"max-level" sets what "max_level" already set`}},
		{"not a mapping", "a.yaml", "- lr\n", []string{"key: value"}},
		{"bad YAML", "a.yaml", "lr: [\n", []string{"--config"}},
		{"bad JSON", "a.json", `{"lr": `, []string{"not a JSON object"}},
		{"unknown preset", "a.yaml", "preset: slow\n", []string{`unknown preset "slow"`}},
		{"other format", "a.toml", "lr = 0.1\n", []string{"name a .yaml, .yml or .json file"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeFile(t, tc.file, tc.content)
			_, err := resolveWith(t, "--config", path, "--iterations", "1")
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range append(tc.want, path) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error spans several lines: %q", err)
			}
		})
	}
	missing := filepath.Join(t.TempDir(), "none.yaml")
	if _, err := resolveWith(t, "--config", missing); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("missing file: %v", err)
	}
	if _, _, err := execute("train", "--resume", "runs/x", "--config", missing); err == nil || !strings.Contains(err.Error(), "give one of them") {
		t.Errorf("--config with --resume: %v", err)
	}
}

// `simclr train --config runs/a/config.json --out runs/b` repeats run a:
// the same settings (config.json equal but for the folder) and, on the
// CPU, the same losses iteration by iteration.
func TestTrainRepeatsRunFromItsConfigJSON(t *testing.T) {
	data := imageFolder(t, 32, 16)
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	if _, stderr, err := execute("train", "--dataset", "folder:"+data, "--iterations", "3", "--max-level", "3",
		"--width", "0.0625", "--proj-dim", "16", "--device", "cpu", "--out", a, "--probe=false",
		"--estimator", "vr-rtmlmc", "--qe", "2", "--seed", "7", "--lr", "0.2", "--checkpoint-every", "1m"); err != nil {
		t.Fatalf("train a: %v\n%s", err, stderr)
	}
	if _, stderr, err := execute("train", "--config", filepath.Join(a, runfolder.ConfigFile), "--out", b); err != nil {
		t.Fatalf("train --config a/config.json: %v\n%s", err, stderr)
	}
	read := func(run string) map[string]any {
		var m map[string]any
		raw, err := os.ReadFile(filepath.Join(run, runfolder.ConfigFile))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	ca, cb := read(a), read(b)
	if ca["out"] != a || cb["out"] != b {
		t.Errorf("out: %v and %v", ca["out"], cb["out"])
	}
	delete(ca, "out")
	delete(cb, "out")
	// device_log records what the machine said when the backend opened
	// (the BLAS race's timings among it), not a setting: each process
	// measures its own.
	if ca["device_log"] == nil || cb["device_log"] == nil {
		t.Errorf("device_log missing: %v and %v", ca["device_log"], cb["device_log"])
	}
	delete(ca, "device_log")
	delete(cb, "device_log")
	if !reflect.DeepEqual(ca, cb) {
		t.Errorf("config.json differs:\n%v\n%v", ca, cb)
	}
	ma, err := runfolder.ReadLines[runfolder.Metrics](filepath.Join(a, runfolder.MetricsFile))
	if err != nil {
		t.Fatal(err)
	}
	mb, err := runfolder.ReadLines[runfolder.Metrics](filepath.Join(b, runfolder.MetricsFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(ma) != 3 || len(mb) != 3 {
		t.Fatalf("%d and %d metrics lines, want 3", len(ma), len(mb))
	}
	for i := range ma {
		if ma[i].Loss != mb[i].Loss || ma[i].SamplesDrawn != mb[i].SamplesDrawn {
			t.Errorf("iteration %d: loss %v, %d images in run a; %v, %d in the repeat", i+1, ma[i].Loss, ma[i].SamplesDrawn, mb[i].Loss, mb[i].SamplesDrawn)
		}
	}
}

// The config parsers return settings or an error for any input, never
// panic, and a YAML setting knows its line (the errors cite it).
func FuzzConfigParsers(f *testing.F) {
	f.Add([]byte("lr: 0.1\nmax_level: 3\ncheckpoint_every: 5m\n"))
	f.Add([]byte(`{"lr": 0.1, "seed": 18446744073709551615, "probe": false, "dataset": "cifar10"}`))
	f.Add([]byte("a: &x 1\nb: *x\n"))
	f.Add([]byte("- 1\n- 2\n"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		settings, err := parseYAMLSettings(raw)
		for _, s := range settings {
			if err == nil && s.line < 1 {
				t.Fatalf("YAML setting %q without a line, from %q", s.key, raw)
			}
		}
		parseJSONSettings(raw)
	})
}
