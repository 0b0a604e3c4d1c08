"""One rank of trainrun.Runner.run and trainrun.run: fetches (main, kwargs,
every_rank) from the Runner, calls main(**kwargs) and reports the return
value (rank 0's, or every rank's for trainrun.run) or the exception with its
traceback, then exits 0 or 1."""
import os
import sys
import traceback
from multiprocessing.connection import Client

try:
    import cloudpickle
except ImportError:
    import pickle as cloudpickle

from trainrun._describe import exception_text
from trainrun.runner import ADDRESS_ENV, KEY_ENV


def _pickled_exception(exception):
    """The exception pickled, if it can be and comes back from it; else None."""
    try:
        blob = cloudpickle.dumps(exception)
        cloudpickle.loads(blob)
        return blob
    except Exception:  # noqa: B902 - any pickling failure
        return None


def _report(conn, exception):
    text = traceback.format_exc()
    sys.stderr.write(text)
    conn.send_bytes(cloudpickle.dumps(('error', (type(exception).__name__, exception_text(exception), text,
                                                 _pickled_exception(exception)))))
    return 1


def _send_value(conn, rank, value, every_rank):
    """Sends the return value (rank 0's alone unless every_rank); one that
    cannot be pickled is reported as such (the rank exits 1)."""
    try:
        reply = cloudpickle.dumps(('ok', value if rank == 0 or every_rank else None))
    except Exception as error:  # noqa: B902 - whatever pickling raises
        text = f'{type(error).__name__}: {exception_text(error)}'
        sys.stderr.write(f'trainrun.Runner: rank {rank} returned a value that cannot be pickled: {text}\n')
        conn.send_bytes(cloudpickle.dumps(('unpicklable', text)))
        return 1
    conn.send_bytes(reply)
    return 0


def main():
    rank = int(os.environ.get('TRAINRUN_RANK', '0'))
    host, port = os.environ[ADDRESS_ENV].rsplit(':', 1)
    with Client((host, int(port)), authkey=bytes.fromhex(os.environ.pop(KEY_ENV))) as conn:
        conn.send_bytes(str(rank).encode())
        fn, kwargs, every_rank = cloudpickle.loads(conn.recv_bytes())
        try:
            value = fn(**kwargs)
        except SystemExit as e:
            if e.code not in (None, 0):
                return _report(conn, e)
            value = None
        except BaseException as e:  # noqa: B902 - KeyboardInterrupt too
            return _report(conn, e)
        return _send_value(conn, rank, value, every_rank)


if __name__ == '__main__':
    sys.exit(main())
