"""Runs the reference scripts (scripts/NAME.py) for a test program in one Python process.

A test program asks for dozens of runs of scripts/*_reference.py (a model made, sentences translated); each
started alone imports torch, numpy and sentencepiece again, which costs more than the run itself for the
tests' small models. This process imports each script once and calls its main() with the arguments asked,
as `python3 scripts/NAME.py ARGS...` would run it: sys.argv set, the working folder kept, SystemExit's
status as the exit status (tests/support/fixtures.cpp, runScript).

Requests on stdin, one JSON object a line: {"script": "ct2_reference.py", "args": [...]}, or {"code": "...",
"args": [...]} for what `python3 -c CODE ARGS...` would run (a fresh namespace; sys.argv[0] is "-c"). Answers on the
standard output this process was started with, one JSON object a line: {"status": N}. Everything the scripts
print (Python's sys.stdout included) goes to stderr, which the caller shows when a run fails.
"""

import importlib
import json
import os
import sys
import traceback


def run(request):
    cwd = os.getcwd()
    try:
        if "code" in request:
            sys.argv = ["-c"] + list(request["args"])
            exec(compile(request["code"], "<string>", "exec"), {"__name__": "__main__"})  # noqa: S102
            return 0
        script = request["script"]
        module = importlib.import_module(script[:-3] if script.endswith(".py") else script)
        sys.argv = [script] + list(request["args"])
        module.main()
        return 0
    except SystemExit as e:  # argparse's errors, sys.exit(message) and sys.exit(N)
        if e.code is None:
            return 0
        if isinstance(e.code, int):
            return e.code
        print(e.code, file=sys.stderr)
        return 1
    except BaseException:  # noqa: B902  any failure is the run's, reported like an uncaught exception
        traceback.print_exc()
        return 1
    finally:
        os.chdir(cwd)
        sys.stdout.flush()
        sys.stderr.flush()


def main():
    sys.path.insert(0, sys.argv[1])  # the scripts folder
    answers = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # what the scripts (or the libraries under them) write to fd 1 goes to stderr
    sys.stdout = os.fdopen(1, "w", encoding="utf-8", closefd=False)
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        status = run(request)
        answers.write(json.dumps({"status": status}) + "\n")
        answers.flush()


if __name__ == "__main__":
    main()
