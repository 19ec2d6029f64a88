"""The one error type users see: bad input or an environment problem they can fix.

The CLI prints it as a single line `lr: error: ...` and exits with code 2; it never shows a
traceback for it. Library code raises it (or a subclass) with a message that names the flag,
file, line or field at fault.

Part of lrcore: the simulator (lrsim), the real backend (lrreal), `analysis` and the `lr` CLI all
import it; it imports neither lrsim nor lrreal.
"""


class UserError(Exception):
    exit_code = 2
