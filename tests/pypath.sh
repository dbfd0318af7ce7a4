# tests/pypath.sh — sourced by tests/run.sh and ci/regress.sh (with BUILD set): every python3 of
# the run is the interpreter that `python3` resolves to now, called directly. Where python3 is a
# version manager's shim (pyenv's is a bash script that starts ~15 helper processes to pick the
# version) each call costs ~0.06 CPU-s and ~0.12 s more than the interpreter itself (20 calls:
# 1.97 CPU-s and 3.2 s through the shim, 0.74 and 0.8 direct; a 2-core AMD EPYC, loaded), and
# make test makes ~600 calls. The interpreter is linked as $BUILD/python/python3 and that
# directory goes first in PATH: the same interpreter, prefix and modules; nothing changes where
# python3 is not a shim (or is already this link).
_pdl_py=$(python3 -c 'import sys; print(sys.executable)' 2>/dev/null)
if [ -n "$_pdl_py" ] && [ -x "$_pdl_py" ] && [ "$(command -v python3)" != "$_pdl_py" ]; then
  mkdir -p "${BUILD:-build}/python" && ln -sfn "$_pdl_py" "${BUILD:-build}/python/python3" \
    && PATH="$(cd "${BUILD:-build}/python" && pwd):$PATH" && export PATH
fi
unset _pdl_py
