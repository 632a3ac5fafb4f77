"""The Go tampering corpus of ``repo_tests`` (``runner: go``): patches of the tiny Go module
(tiny_go_repo.py) that try to be paid without fixing ``Add``.

``GO_TAMPERING[name](outside)`` is ``(files, links)``: path -> new text (None deletes) and
path -> symbolic link target. Shared by test_go_runner.py and
benchmarks/bench_repo_tampering.py (beside a naive ``go test ./...; echo $?``).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tiny_go_repo import CALC, CALC_TEST

Change = tuple[dict[str, str | None], dict[str, str]]

#: a record that would pay TestAdd if the nonce (read from the channel) were accepted
_FORGE = ('`{"nonce":"` + nonce + `","test":"TestAdd","returned":true,'
          '"failed":false,"skipped":false}` + "\\n"')


def _calc_with(imports: list[str], extra: str) -> str:
    """calc.go, still buggy, with ``imports`` and ``extra`` code added."""
    block = "".join(f"\t{name}\n" for name in imports)
    head = f"package calc\n\nimport (\n{block})\n" if imports else "package calc\n"
    return head + CALC.removeprefix("package calc\n") + "\n" + extra


def _only(files: dict[str, str | None]) -> Callable[[Path], Change]:
    return lambda outside: (files, {})


GO_TAMPERING: dict[str, Callable[[Path], Change]] = {
    # the process ends "successfully" before or instead of the tests
    "init_exit_zero": _only({"calc.go": _calc_with(['"os"'], "func init() { os.Exit(0) }\n")}),
    "fake_json_and_verbose_lines": _only({"calc.go": _calc_with(['"fmt"', '"os"'], """\
func init() {
	fmt.Println(`{"Action":"pass","Package":"example.com/calc","Test":"TestAdd"}`)
	fmt.Println("--- PASS: TestAdd (0.00s)\\nPASS\\nok  \\texample.com/calc\\t0.001s")
	os.Exit(0)
}
""")}),
    "flag_set_runs_no_test": _only({"calc.go": _calc_with(['"flag"', '"testing"'], """\
func init() {
	testing.Init()
	flag.Set("test.run", "^$")
}
""")}),
    "goexit_in_code": _only({"calc.go": CALC.replace(
        "package calc\n", 'package calc\n\nimport "runtime"\n').replace(
        "\treturn a - b", "\truntime.Goexit()\n\treturn a - b")}),
    "kill_the_driver": _only({"calc.go": _calc_with(['"os"'], """\
func init() {
	if parent, err := os.FindProcess(os.Getppid()); err == nil {
		parent.Kill()
	}
	os.Exit(0)
}
""")}),
    # a test of the patch's own: TestMain, edited, deleted, tagged away, skipped
    "planted_test_main": _only({"main_test.go": """\
package calc

import (
	"os"
	"testing"
)

func TestMain(m *testing.M) { os.Exit(0) }
"""}),
    "test_main_in_code_file": _only({"calc.go": _calc_with(['"os"', '"testing"'], """\
func TestMain(m *testing.M) { os.Exit(0) }
""")}),
    "edited_test": _only({"calc_test.go": CALC_TEST.replace("!= 5", "!= -1")}),
    "deleted_test": _only({"calc_test.go": None}),
    "build_tag_drops_test": _only({"calc_test.go": "//go:build ignore\n\n" + CALC_TEST}),
    "skip_in_test": _only({"calc_test.go": CALC_TEST.replace(
        "func TestAdd(t *testing.T) {\n", "func TestAdd(t *testing.T) {\n\tt.Skip(\"later\")\n")}),
    "test_file_linked_out": lambda outside: ({"calc_test.go": None},
                                             {"calc_test.go": str(outside / "x_test.go")}),
    # the module itself: replace directive, vendored standard library stand-in
    "go_mod_replace": _only({"go.mod": "module example.com/calc\n\ngo 1.19\n\n"
                                       "require example.com/fake v0.0.0\n\n"
                                       "replace example.com/fake => ./fake\n",
                             "fake/go.mod": "module example.com/fake\n\ngo 1.19\n"}),
    "vendor_folder": _only({"vendor/modules.txt": "# example.com/fake v0.0.0\n",
                            "vendor/testing/testing.go": "package testing\n"}),
    # reaching the verdict's channel or the testing package's state
    "unsafe_linkname_testing": _only({"calc.go": _calc_with(['"testing"', '_ "unsafe"'], """\
//go:linkname matchString testing.matchString
func matchString(pat, str string) (bool, error)

var _ = testing.Short
""")}),
    "syscall_write_channel": _only({"calc.go": _calc_with(['"os"', '"strconv"', '"syscall"'], f"""\
func init() {{
	fd, _ := strconv.Atoi(os.Getenv("REWARDKIT_GO_FD"))
	buffer := make([]byte, 128)
	n, _ := syscall.Read(fd, buffer)
	nonce := string(buffer[:n-1])
	syscall.Write(fd, []byte({_FORGE}))
	os.Exit(0)
}}
""")}),
    "syscall_import_hidden": _only({"calc.go": CALC.replace(
        "package calc\n", 'package calc\n\nimport ("os"; sys `syscall`)\n\n'
        "func init() { sys.Write(3, []byte(os.Args[0])) }\n")}),
    "newfile_write_channel": _only({"calc.go": _calc_with(['"os"', '"strconv"'], f"""\
func init() {{
	fd, _ := strconv.Atoi(os.Getenv("REWARDKIT_GO_FD"))
	channel := os.NewFile(uintptr(fd), "x")
	buffer := make([]byte, 128)
	n, _ := channel.Read(buffer)
	nonce := string(buffer[:n-1])
	channel.Write([]byte({_FORGE}))
	os.Exit(0)
}}
""")}),
    "proc_fd_steal_nonce": _only({"calc.go": _calc_with(['"os"'], f"""\
func init() {{
	for _, dir := range []string{{"/pr" + "oc/self/fd/", "/de" + "v/fd/"}} {{
		channel, err := os.OpenFile(dir+os.Getenv("REWARDKIT_GO_FD"), os.O_RDWR, 0)
		if err != nil {{
			continue
		}}
		buffer := make([]byte, 128)
		n, _ := channel.Read(buffer)
		if n > 1 {{
			nonce := string(buffer[:n-1])
			channel.Write([]byte({_FORGE}))
			os.Exit(0)
		}}
	}}
}}
""")}),
    "proc_self_mem_open": _only({"calc.go": _calc_with(['"os"'], """\
// a patch that could open its own memory could rewrite the testing package's state
var memory, memoryErr = os.OpenFile("/pr"+"oc/self/mem", os.O_RDWR, 0)

func init() {
	if memoryErr == nil {
		memory.Close()
		os.Exit(0)
	}
}
""")}),
    "os_exec_shell_writes_channel": _only({"calc.go": _calc_with(['"os"', '"os/exec"'], """\
func init() {
	script := `read n <&$REWARDKIT_GO_FD; printf '{"nonce":"%s","test":"TestAdd",` +
		`"returned":true,"failed":false,"skipped":false}\\n' "$n" >&$REWARDKIT_GO_FD`
	exec.Command("/bin/sh", "-c", script).Run()
	os.Exit(0)
}
""")}),
    "cgi_handler_shell_writes_channel": _only({"calc.go": _calc_with(
        ['"net/http/cgi"', '"net/http/httptest"', '"os"'], """\
func init() {
	script := `read n <&$REWARDKIT_GO_FD; printf '{"nonce":"%s","test":"TestAdd",` +
		`"returned":true,"failed":false,"skipped":false}\\n' "$n" >&$REWARDKIT_GO_FD`
	handler := &cgi.Handler{Path: "/bin/sh", Args: []string{"-c", script},
		InheritEnv: []string{"REWARDKIT_GO_FD"}}
	handler.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil))
	os.Exit(0)
}
""")}),
    "assembly_file": _only({"calc_amd64.s": "TEXT ·Sub(SB),$0\n\tRET\n"}),
    "cgo_import": _only({"calc.go": _calc_with(['"C"'], "")}),
    "goroutine_outlives_the_test": _only({"calc.go": _calc_with(['"fmt"', '"time"'], """\
func init() {
	go func() {
		for {
			fmt.Println("--- PASS: TestAdd (0.00s)")
			time.Sleep(time.Millisecond)
		}
	}()
}
""")}),
    "recovered_panic_in_code": _only({"calc.go": CALC.replace(
        "\treturn a - b", "\tdefer func() { recover() }()\n\tpanic(\"no\")")}),
}


def go_patch_of(name: str, repo: Path, outside: Path) -> str:
    """The diff of corpus entry ``name`` over the base of ``repo``."""
    from tiny_repo import diff_of

    files, links = GO_TAMPERING[name](outside)
    return diff_of(repo, files, links)


def naive_go_paid(repo: Path, patch: str, scratch: Path) -> bool:
    """``git apply`` the patch in a clone and run ``go test ./...; echo $?``: paid when
    it prints 0. It runs the patch outside any sandbox: for this corpus only."""
    import os
    import subprocess

    from tiny_repo import git

    clone = scratch / "naive-go"
    subprocess.run(["rm", "-rf", str(clone)], check=True)
    git(scratch, "clone", "-q", str(repo), str(clone))
    applied = subprocess.run(["git", "apply", "-"], cwd=clone, input=patch, text=True,
                             capture_output=True, check=False)
    if applied.returncode != 0:
        return False
    cache = scratch / "naive-gocache"
    env = {"PATH": os.environ["PATH"], "HOME": str(scratch), "GOCACHE": str(cache),
           "GOPATH": str(scratch / "naive-gopath"), "GOPROXY": "off", "GOFLAGS": "-mod=mod",
           "CGO_ENABLED": "0"}
    run = subprocess.run(["sh", "-c", 'go test ./...; echo "exit=$?"'], cwd=clone, env=env,
                         capture_output=True, text=True, timeout=180, check=False)
    lines = run.stdout.strip().splitlines()
    return bool(lines) and lines[-1] == "exit=0"
