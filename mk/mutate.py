"""make mutate: cosmic-ray over the rule cores, the wire modules and the host's
logging path, each module against the test files that cover it.

Why cosmic-ray (docs/testing.md, "Mutation testing"): it mutates one file at a
time in place and runs a shell command, so the same mutant is seen by the
CPython tests, the MicroPython VMs and the subprocesses the tests start.

The run happens in a scratch copy of the work tree (build/mutate/tree), so
the tree you edit is never mutated.  For every module: one unmutated run of
its tests (the baseline; the per-mutant timeout is a multiple of it), then
`cosmic-ray init`, the operator filter, `cosmic-ray exec` (one worker, the
local distributor), `cosmic-ray dump`.  The report (build/mutate/report.md,
build/mutate/scores.json) gives per module the mutants, killed, survivors,
the ones docs/mutants.md explains as equivalent, the score and the run time,
and every survivor's diff.

    python mk/mutate.py [--only protocol,link] [--out build/mutate]
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.dirname(sys.executable)
FW = "firmware/hallclock_fw/"
HOST = "host/hallclock/"

# (name, module, test files that cover it).  The firmware cores' tests are
# MicroPython-compatible (tests/core runs them in CPython here; the same
# functions run in the VM under make test).
MODULES = [
    ("core/timing", FW + "core/timing.py", ["tests/core", "tests/test_drivers.py"]),
    ("core/scrabble", FW + "core/scrabble.py", ["tests/core"]),
    ("core/duplicate", FW + "core/duplicate.py", ["tests/core"]),
    # tests/test_backgammon.py (end to end, 23 s) is left out: the core file
    # alone kills every mutant docs/mutants.md does not list as equivalent
    ("core/backgammon", FW + "core/backgammon.py",
     ["tests/core/test_backgammon_core.py"]),
    ("core/round", FW + "core/round.py",
     ["tests/core/test_round_core.py", "tests/core/test_thresholds_core.py",
      "tests/core/test_scrabble_restore.py", "tests/core/test_scrabble_state_core.py",
      "tests/core/test_scrabble_core.py", "tests/test_restore_round.py"]),
    ("protocol", FW + "protocol.py",
     ["tests/core/test_grammar_core.py", "tests/test_link.py", "tests/test_host_frames.py",
      "tests/test_boundaries.py", "tests/test_protocol_fuzz.py"]),
    ("link", FW + "link.py",
     ["tests/test_boundaries.py", "tests/test_link.py", "tests/core/test_grammar_core.py",
      "tests/test_protocol_fuzz.py"]),
    ("settings", FW + "settings.py", ["tests/test_settings.py", "tests/test_boundaries.py"]),
    ("names", FW + "names.py", ["tests/test_cli_fuzz.py", "tests/test_boundaries.py"]),
    ("logger", HOST + "link/logger.py",
     ["tests/test_logger.py", "tests/test_link.py", "tests/test_full_disk.py"]),
    ("hostlink", HOST + "link/hostlink.py",
     ["tests/test_hostlink.py", "tests/test_link.py", "tests/test_host_frames.py",
      "tests/test_boundaries.py", "tests/test_protocol_fuzz.py"]),
    ("logfile", HOST + "link/logfile.py",
     ["tests/test_logfile.py", "tests/test_link.py", "tests/test_host_frames.py",
      "tests/test_model.py", "tests/test_outputs.py"]),
    ("model", HOST + "views/model.py",
     ["tests/test_model_edges.py", "tests/test_model.py", "tests/test_restore_round.py",
      "tests/test_report_golden.py", "tests/test_claims.py"]),
    ("report", HOST + "views/report.py",
     ["tests/test_report_golden.py", "tests/test_report.py", "tests/test_claims.py"]),
]

# The operators kept are the small realistic bugs: off-by-one comparisons
# (< for <=), a wrong sign, a constant one off, a condition negated or
# dropped, and/or swapped, a loop that never runs, a wrong exception caught.
# Dropped: the far-fetched binary swaps (+ for **, | for >>, ...) and the
# random VariableReplacer/VariableInserter (not reproducible run to run).
KEEP_BINARY = {"Add_Sub", "Sub_Add", "Mul_Add", "Mul_FloorDiv", "FloorDiv_Mul", "Div_Mul",
               "Mod_FloorDiv", "BitAnd_BitOr", "BitOr_BitAnd", "LShift_RShift", "RShift_LShift"}
KEEP_COMPARE = {"Lt_LtE", "LtE_Lt", "Gt_GtE", "GtE_Gt", "Eq_NotEq", "NotEq_Eq",
                "Is_IsNot", "IsNot_Is", "In_NotIn", "NotIn_In"}
DROP_OTHER = ["core/VariableReplacer", "core/VariableInserter", "core/RemoveDecorator",
              "core/ReplaceUnaryOperator_(?!USub_UAdd|Delete_Not).*"]


def exclude_operators():
    out = list(DROP_OTHER)
    for line in subprocess.run([os.path.join(BIN, "cosmic-ray"), "operators"],
                               capture_output=True, text=True, check=True).stdout.split():
        m = re.match(r"core/Replace(Binary|Comparison)Operator_(\w+)$", line)
        if m and m.group(2) not in (KEEP_BINARY if m.group(1) == "Binary" else KEEP_COMPARE):
            out.append(re.escape(line) + "$")
    return out


def copy_tree(dest):
    """The work tree as it is now (tracked and new files, no caches), with the
    installed node modules linked in."""
    if os.path.exists(dest):
        shutil.rmtree(dest)
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT,
                           capture_output=True, text=True, check=True).stdout.split("\0")
    for rel in files:
        if not rel or not os.path.isfile(os.path.join(ROOT, rel)):
            continue
        os.makedirs(os.path.dirname(os.path.join(dest, rel)) or dest, exist_ok=True)
        shutil.copy2(os.path.join(ROOT, rel), os.path.join(dest, rel))
    nm = os.path.join(ROOT, "tools/mpvm/node_modules")
    if os.path.isdir(nm):
        os.symlink(nm, os.path.join(dest, "tools/mpvm/node_modules"))


def _uses_hypothesis(tests):
    for t in tests:
        path = os.path.join(ROOT, t)
        files = [os.path.join(d, f) for d, _, names in os.walk(path) for f in names
                 if f.endswith(".py")] if os.path.isdir(path) else [path]
        for name in files:
            if os.path.isfile(name):
                with open(name, encoding="utf-8") as f:
                    if "hypothesis" in f.read():
                        return True
    return False


def test_command(tests):
    # -x: the first failing test kills the mutant; no cache, no bytecode: a
    # mutant of the same size written in the same second must not run stale code.
    # Tests that do not use hypothesis run without its pytest plugin: loading it
    # is most of pytest's start-up (about 1.4 s of CPU of every mutant's run)
    no_hyp = [] if _uses_hypothesis(tests) else ["-p", "no:hypothesispytest"]
    return " ".join([os.path.join(BIN, "python"), "-B", "-m", "pytest", "-x", "-q",
                     "-p", "no:cacheprovider", *no_hyp, "--timeout=120", *tests])


def _cell(text):
    return text.strip().strip("`").replace("\\|", "|")


def known_equivalents():
    """(module, operator, line before, line after) of every row of docs/mutants.md's
    table: | module | operator | `line` | `mutated line` | why it is equivalent |"""
    rows = set()
    path = os.path.join(ROOT, "docs/mutants.md")
    if not os.path.exists(path):
        return rows
    names = {m[0] for m in MODULES}
    with open(path, encoding="utf-8") as f:
        for line in f:
            cells = line.strip().strip("|").split(" | ")
            if len(cells) >= 5 and cells[0].strip() in names:
                rows.add((cells[0].strip(), _cell(cells[1]), _cell(cells[2]), _cell(cells[3])))
    return rows


def mutated_line(diff):
    """The first added line of a mutant's diff, stripped."""
    for line in diff.split("\n"):
        if line.startswith("+") and not line.startswith("+++"):
            return line[1:].strip()
    return ""


def row(name, s):
    def code(text):
        return "`" + text.replace("|", "\\|") + "`"
    return f"| {name} | {s['operator']} | {code(s['source'])} | {code(s.get('mutated', ''))} | ... |"


def source_line(tree, module, line):
    with open(os.path.join(tree, module), encoding="utf-8") as f:
        lines = f.read().split("\n")
    return lines[line - 1].strip() if 0 < line <= len(lines) else ""


def _retest_survivors(name, module, session, tree, env):
    """Forget the results of the survivors docs/mutants.md does not explain:
    the next exec runs only them again (the module must be as it was when the
    session began)."""
    import sqlite3
    dump = subprocess.run([os.path.join(BIN, "cosmic-ray"), "dump", session], cwd=tree, env=env,
                          capture_output=True, text=True, check=True).stdout
    equivalents = known_equivalents()
    again = []
    for line in dump.splitlines():
        item, result = json.loads(line)
        if not result or result.get("test_outcome") != "survived":
            continue
        mut = item["mutations"][0]
        key = (name, mut["operator_name"].split("/", 1)[1],
               source_line(tree, module, mut["start_pos"][0]),
               mutated_line(result.get("diff") or ""))
        if key not in equivalents:
            again.append(item["job_id"])
    db = sqlite3.connect(session)
    with db:
        db.executemany("DELETE FROM work_results WHERE job_id = ?", [(j,) for j in again])
    db.close()


def run_module(name, module, tests, out, tree, env, excl, factor, survivors_only=False):
    tag = name.replace("/", "_")
    cfg = os.path.join(out, tag + ".toml")
    session = os.path.join(out, tag + ".sqlite")
    if survivors_only and not os.path.exists(session):
        survivors_only = False
    if os.path.exists(session) and not survivors_only:
        os.remove(session)
    started = time.monotonic()
    base = subprocess.run(test_command(tests).split(), cwd=tree, env=env,
                          capture_output=True, text=True)
    baseline_s = time.monotonic() - started
    if base.returncode != 0:
        return {"module": module, "error": "the tests fail without a mutant:\n"
                + base.stdout[-3000:] + base.stderr[-2000:]}
    timeout = max(30.0, factor * baseline_s)
    with open(cfg, "w", encoding="utf-8") as f:
        f.write("[cosmic-ray]\n")
        f.write(f"module-path = {json.dumps(module)}\n")
        f.write(f"timeout = {timeout:.0f}\n")
        f.write("excluded-modules = []\n")
        f.write(f"test-command = {json.dumps(test_command(tests))}\n")
        f.write('[cosmic-ray.distributor]\nname = "local"\n')
        f.write("[cosmic-ray.filters.operators-filter]\n")
        f.write(f"exclude-operators = {json.dumps(excl)}\n")
    cr = os.path.join(BIN, "cosmic-ray")
    if survivors_only:
        _retest_survivors(name, module, session, tree, env)
    else:
        subprocess.run([cr, "init", cfg, session], cwd=tree, env=env, check=True)
        subprocess.run([os.path.join(BIN, "cr-filter-operators"), session, cfg], cwd=tree,
                       env=env, check=True)
    subprocess.run([cr, "exec", cfg, session], cwd=tree, env=env, check=True)
    run_s = time.monotonic() - started
    dump = subprocess.run([cr, "dump", session], cwd=tree, env=env, capture_output=True,
                          text=True, check=True).stdout
    equivalents = known_equivalents()
    counts = {"mutants": 0, "killed": 0, "timeout": 0, "incompetent": 0, "survived": 0,
              "equivalent": 0}
    survivors = []
    for line in dump.splitlines():
        item, result = json.loads(line)
        if result is None or result.get("worker_outcome") in ("skipped", "no-test"):
            continue
        counts["mutants"] += 1
        outcome = result.get("test_outcome")
        if outcome == "survived":
            mut = item["mutations"][0]
            op = mut["operator_name"].split("/", 1)[1]
            src = source_line(tree, module, mut["start_pos"][0])
            after = mutated_line(result.get("diff") or "")
            key = (name, op, src, after)
            if key in equivalents:
                counts["equivalent"] += 1
            else:
                counts["survived"] += 1
                survivors.append({"operator": op, "line": mut["start_pos"][0], "source": src,
                                  "mutated": after, "diff": result.get("diff") or ""})
        elif outcome == "incompetent":
            counts["incompetent"] += 1
        elif (result.get("output") or "") == "timeout":
            counts["timeout"] += 1
        else:
            counts["killed"] += 1
    scored = counts["mutants"] - counts["equivalent"]
    caught = counts["killed"] + counts["timeout"] + counts["incompetent"]
    counts["score"] = round(100.0 * caught / scored, 1) if scored else 100.0
    counts.update({"module": module, "tests": tests, "baseline_s": round(baseline_s, 1),
                   "survivors_only": survivors_only,
                   "timeout_s": round(timeout), "run_s": round(run_s), "survivors": survivors})
    return counts


def write_report(out, results):
    with open(os.path.join(out, "scores.json"), "w", encoding="utf-8") as f:
        json.dump(results, f, indent=1)
    lines = ["# make mutate report", "",
             "| module | mutants | killed | timeout | equivalent | survived | score % | run s |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for name, r in results.items():
        if "error" in r:
            lines.append(f"| {name} | error | | | | | | |")
            continue
        lines.append(f"| {name} | {r['mutants']} | {r['killed'] + r['incompetent']} | "
                     f"{r['timeout']} | {r['equivalent']} | {r['survived']} | {r['score']} | "
                     f"{r['run_s']}{' (survivors only)' if r.get('survivors_only') else ''} |")
    lines.append("")
    lines.append("Score: (killed + timeout) / (mutants - equivalent); equivalent = listed in "
                 "docs/mutants.md.")
    for name, r in results.items():
        if "error" in r:
            lines += ["", f"## {name}: error", "", "```", r["error"], "```"]
            continue
        if not r["survivors"]:
            continue
        lines += ["", f"## {name}: {len(r['survivors'])} survivors", ""]
        for s in r["survivors"]:
            lines += [f"- {s['operator']} line {s['line']}: `{s['source']}`", "", "```diff",
                      s["diff"].rstrip(), "```", ""]
        lines += ["A survivor that changes nothing observable goes into docs/mutants.md "
                  "as a row like these (the why filled in):", "", "```"]
        lines += [row(name, s) for s in r["survivors"]] + ["```"]
    with open(os.path.join(out, "report.md"), "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", default="", help="comma-separated module names (default: all)")
    ap.add_argument("--out", default=os.path.join(ROOT, "build/mutate"))
    ap.add_argument("--timeout-factor", type=float, default=4.0,
                    help="per-mutant timeout = this times the baseline run (at least 30 s)")
    ap.add_argument("--survivors", action="store_true",
                    help="run only the last session's survivors again, against the tests as "
                         "they are now (the module itself unchanged since that session)")
    args = ap.parse_args(argv)
    names = [m[0] for m in MODULES]
    only = [n for n in args.only.split(",") if n]
    for n in only:
        if n not in names:
            ap.error(f"no module {n!r}; one of: {', '.join(names)}")
    out = os.path.abspath(args.out)
    os.makedirs(out, exist_ok=True)
    tree = os.path.join(out, "tree")
    copy_tree(tree)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([os.path.join(tree, "host"), os.path.join(tree, "firmware")])
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    excl = exclude_operators()
    results = {}
    scores = os.path.join(out, "scores.json")
    if only and os.path.exists(scores):  # a partial run keeps the other modules' rows
        with open(scores, encoding="utf-8") as f:
            results = {k: v for k, v in json.load(f).items() if k in names}
    table = {m[0]: m for m in MODULES}
    for name, module, tests in [table[n] for n in only] if only else MODULES:
        tests = [t for t in tests if os.path.exists(os.path.join(tree, t))]
        print(f"mutate: {name} against {' '.join(tests)}", flush=True)
        results[name] = run_module(name, module, tests, out, tree, env, excl,
                                   args.timeout_factor, args.survivors)
        r = results[name]
        print(f"mutate: {name}: " + (r["error"].split("\n")[0] if "error" in r else
              f"{r['mutants']} mutants, {r['survived']} survived, score {r['score']} %, "
              f"{r['run_s']} s"), flush=True)
        write_report(out, {n: results[n] for n in names if n in results})
    print(f"mutate: report in {os.path.relpath(os.path.join(out, 'report.md'), ROOT)}")
    bad = [n for n, r in results.items() if "error" in r or r["score"] < 95.0]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
