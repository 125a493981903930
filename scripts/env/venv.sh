# Helpers of the scripts that keep a Python environment with a pinned package
# (scripts/ci/typecheck.sh, scripts/env/torch-env.sh, scripts/env/ffcv-env.sh).
# Sourced, not run:
#
#   . "$REPO/scripts/env/venv.sh"
#   venv_make "$REPO/.venv-x" python3.11      # makes it if missing
#   venv_pip "$PY" -r requirements.txt        # pip install, quiet, to stderr
#   venv_pin "$PY" mypy 2.4.1                 # mypy==2.4.1 unless installed
#   venv_torch "$PY"                          # torch unless importable
#
# Messages go to stderr, prefixed with the calling script's name; a function
# that fails returns non-zero after saying why, and the caller decides.

_venv_log() { echo "$(basename "$0"): $*" >&2; }

# venv_make VENV PYTHON: creates the venv VENV with PYTHON unless it has a
# python already, with a .gitignore inside that keeps it out of git (the
# repository's .gitignore is not touched).
venv_make() {
    local venv="$1" python="$2"
    [ -x "$venv/bin/python" ] && return 0
    command -v "$python" >/dev/null || { _venv_log "error: $python not found (set PYTHON)"; return 1; }
    _venv_log "creating $venv ($("$python" -V 2>&1))"
    "$python" -m venv "$venv" >&2 || { _venv_log "error: '$python -m venv $venv' failed"; return 1; }
    echo '*' >"$venv/.gitignore"
}

# venv_pip PY ARGS...: pip install ARGS into PY's environment, quietly.
venv_pip() {
    local py="$1"
    shift
    "$py" -m pip install --disable-pip-version-check --no-input -q "$@" >&2
}

# venv_pin PY DIST VERSION [PIP_ARGS...]: installs DIST==VERSION (with
# PIP_ARGS, e.g. --no-deps) unless PY's environment has that version of the
# distribution DIST already.
venv_pin() {
    local py="$1" dist="$2" version="$3"
    shift 3
    local have
    have="$("$py" -c 'import importlib.metadata as m, sys; print(m.version(sys.argv[1]))' \
        "$dist" 2>/dev/null || true)"
    [ "$have" = "$version" ] && return 0
    local t=$SECONDS
    _venv_log "pip install ${*:+$* }$dist==$version into $("$py" -c 'import sys; print(sys.prefix)')"
    venv_pip "$py" "$@" "$dist==$version" || { _venv_log "error: pip could not install $dist==$version"; return 1; }
    _venv_log "$dist $version installed in $((SECONDS - t)) s"
}

# venv_torch PY [SPEC]: installs SPEC (default torch) unless PY imports
# torch: the CPU-only wheel from $TORCH_CPU_INDEX when that index answers
# (default https://download.pytorch.org/whl/cpu; empty to skip it), else the
# default wheel of the registry, which on Linux x86-64 pulls in the CUDA
# libraries (~2.8 GB of wheels, 5.3 GB installed).
venv_torch() {
    local py="$1" spec="${2:-torch}" index="${TORCH_CPU_INDEX-https://download.pytorch.org/whl/cpu}"
    if "$py" -c 'import torch' 2>/dev/null; then
        _venv_log "torch $("$py" -c 'import torch; print(torch.__version__)') already installed"
        return 0
    fi
    local t=$SECONDS installed=""
    if [ -n "$index" ]; then
        _venv_log "pip install $spec from $index (CPU only)"
        if venv_pip "$py" --retries 0 --timeout 20 --index-url "$index" "$spec"; then
            installed=cpu
        else
            _venv_log "the CPU-only index did not answer; the registry's default wheel instead (with CUDA libraries, ~2.8 GB)"
        fi
    fi
    if [ -z "$installed" ]; then
        _venv_log "pip install $spec"
        venv_pip "$py" "$spec" || { _venv_log "error: pip could not install $spec"; return 1; }
    fi
    local prefix
    prefix="$("$py" -c 'import sys; print(sys.prefix)')"
    _venv_log "torch $("$py" -c 'import torch; print(torch.__version__)') installed in $((SECONDS - t)) s" \
        "($(du -sh "$prefix" | cut -f1) in $prefix)"
}
