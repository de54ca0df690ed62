package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// readmeCommands returns the command lines of README.md's sh blocks, less
// their comments.
func readmeCommands(t *testing.T) []string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	in := false
	for _, line := range strings.Split(string(raw), "\n") {
		switch {
		case strings.HasPrefix(line, "```sh"):
			in = true
		case strings.HasPrefix(line, "```"):
			in = false
		case in:
			if i := strings.Index(line, " #"); i >= 0 {
				line = line[:i]
			}
			if line = strings.TrimSpace(line); line != "" {
				out = append(out, line)
			}
		}
	}
	return out
}

// tiny rewrites a README `simclr` command to run in seconds on the test's
// image folder: data sets become folder:data, run folders and outputs move
// under dir, training takes 3 iterations of a narrow network at level 3
// (stopping after 2, so that the README's --resume has one left), and the
// sizes of levels, bench and the kNN monitor shrink.
func tiny(args []string, data, dir string) []string {
	sub := args[0]
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		next := func() string { i++; return args[i] }
		switch {
		case a == "--dataset":
			out = append(out, a, "folder:"+data)
			next()
		case a == "--max-level":
			out = append(out, a, "3")
			next()
		case a == "--epochs":
			next() // the length is --iterations below
		case a == "--draws":
			out = append(out, a, "3")
			next()
		case a == "--images":
			out = append(out, a, "4")
			next()
		case a == "--steps":
			out = append(out, a, "1")
			next()
		case strings.HasPrefix(a, "runs/") || strings.HasPrefix(a, "reports/") || strings.HasSuffix(a, ".npy"):
			out = append(out, filepath.Join(dir, a))
		default:
			out = append(out, a)
		}
	}
	device := []string{"--device", "cpu"}
	switch {
	case sub == "train" && slices.Contains(args, "--resume"):
		out = append(out, "--workers", "1")
	case sub == "train":
		out = append(out, "--iterations", "3", "--iterations-limit", "2", "--width", "0.0625", "--proj-dim", "16", "--qe", "2", "--eval-every", "0")
		out = append(out, device...)
	case sub == "eval" && slices.Contains(args, "knn"):
		out = append(out, "--knn-k", "5")
		out = append(out, device...)
	case sub == "eval", sub == "levels", sub == "embed":
		out = append(out, device...)
	case sub == "bench":
		out = append(out, "--width", "0.0625")
		out = append(out, device...)
	}
	return out
}

// Every command README.md shows runs: `simclr` commands in order, at tiny
// sizes on a small image folder (the same flags, data and run folders
// moved, lengths cut); `go build` as written; the example programs built
// and run (`--quick` whole, the others, minutes long, with --help after the
// README's flags, which fails on a flag they do not define); the scripts
// parsed by bash, fetch_data.sh asked for the data sets the README names.
// A README command the test cannot place fails it.
func TestReadmeCommandsRun(t *testing.T) {
	data := imageFolder(t, 32, 16)
	dir := t.TempDir()
	repo, _ := filepath.Abs(filepath.Join("..", ".."))
	examples := ""
	for _, line := range readmeCommands(t) {
		fields := strings.Fields(line)
		t.Run(line, func(t *testing.T) {
			switch {
			case fields[0] == "./simclr":
				args := tiny(fields[1:], data, dir)
				if len(args) == 0 {
					args = []string{"--help"}
				}
				if stdout, stderr, err := execute(args...); err != nil {
					t.Fatalf("simclr %s: %v\n%s\n%s", strings.Join(args, " "), err, stdout, stderr)
				}
			case line == "go build -o simclr ./cmd/simclr":
				cmd := exec.Command("go", "build", "-o", filepath.Join(dir, "simclr"), "./cmd/simclr")
				cmd.Dir = repo
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("%s: %v\n%s", line, err, out)
				}
			case len(fields) >= 3 && fields[0] == "go" && fields[1] == "run" && strings.HasPrefix(fields[2], "./examples/"):
				if examples == "" {
					examples = filepath.Join(dir, "examples") + string(filepath.Separator)
					cmd := exec.Command("go", "build", "-o", examples, "./examples/...")
					cmd.Dir = repo
					if out, err := cmd.CombinedOutput(); err != nil {
						t.Fatalf("go build ./examples/...: %v\n%s", err, out)
					}
				}
				args := fields[3:]
				if !slices.Contains(args, "--quick") {
					args = append(args, "--help")
				}
				cmd := exec.Command(examples+filepath.Base(fields[2]), args...)
				cmd.Dir = repo
				cmd.Env = append(os.Environ(), "SIMCLR_CPU_SPIN=0")
				out, _ := cmd.CombinedOutput() // --help exits 0, 1 or 2 by program
				if strings.Contains(string(out), "not defined") || !strings.Contains(string(out), "Usage of") && !slices.Contains(args, "--quick") {
					t.Fatalf("%s: a flag the program does not define, or no usage:\n%s", line, out)
				}
				if slices.Contains(args, "--quick") && cmd.ProcessState.ExitCode() != 0 {
					t.Fatalf("%s: exit %d\n%s", line, cmd.ProcessState.ExitCode(), out)
				}
			case strings.HasPrefix(fields[0], "scripts/") && strings.HasSuffix(fields[0], ".sh"):
				script := filepath.Join(repo, fields[0])
				if out, err := exec.Command("bash", "-n", script).CombinedOutput(); err != nil {
					t.Fatalf("%s does not parse: %v\n%s", fields[0], err, out)
				}
				if info, err := os.Stat(script); err != nil || info.Mode()&0o111 == 0 {
					t.Fatalf("%s is not an executable file: %v", fields[0], err)
				}
				if fields[0] == "scripts/fetch_data.sh" {
					help, err := exec.Command("bash", script, "--help").CombinedOutput()
					if err != nil {
						t.Fatalf("fetch_data.sh --help: %v\n%s", err, help)
					}
					for _, name := range fields[1:] {
						if strings.HasPrefix(name, "-") {
							break
						}
						if !strings.Contains(string(help), name) {
							t.Errorf("fetch_data.sh does not know the data set %s the README fetches", name)
						}
					}
				}
			default:
				t.Fatalf("README command %q: the test does not know how to run it; add it here", line)
			}
		})
	}
}
