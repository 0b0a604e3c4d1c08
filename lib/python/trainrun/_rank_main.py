"""One rank of trainrun.Runner.run: fetches (main, kwargs) from the Runner,
calls main(**kwargs) and reports the return value (rank 0) or the exception
with its traceback, then exits 0 or 1."""
import os
import sys
import traceback
from multiprocessing.connection import Client

try:
    import cloudpickle
except ImportError:
    import pickle as cloudpickle

from trainrun.runner import ADDRESS_ENV, KEY_ENV


def _picklable(exception):
    try:
        cloudpickle.loads(cloudpickle.dumps(exception))
        return exception
    except Exception:
        return None


def _report(conn, exception):
    text = traceback.format_exc()
    sys.stderr.write(text)
    conn.send_bytes(cloudpickle.dumps(('error', (type(exception).__name__, str(exception), text,
                                                 _picklable(exception)))))
    return 1


def main():
    rank = int(os.environ.get('TRAINRUN_RANK', '0'))
    host, port = os.environ[ADDRESS_ENV].rsplit(':', 1)
    with Client((host, int(port)), authkey=bytes.fromhex(os.environ.pop(KEY_ENV))) as conn:
        conn.send_bytes(str(rank).encode())
        fn, kwargs = cloudpickle.loads(conn.recv_bytes())
        try:
            value = fn(**kwargs)
        except SystemExit as e:
            if e.code not in (None, 0):
                return _report(conn, e)
            value = None
        except BaseException as e:  # noqa: B902 - KeyboardInterrupt too
            return _report(conn, e)
        conn.send_bytes(cloudpickle.dumps(('ok', value if rank == 0 else None)))
    return 0


if __name__ == '__main__':
    sys.exit(main())
