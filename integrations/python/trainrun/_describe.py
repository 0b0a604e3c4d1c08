"""Text for an exception that is always there: str() of it, or, when its
__str__ itself raises, its type and a repr that cannot fail. For messages
that cross processes (trainrun.Runner, broadcast_object's errors)."""


def exception_text(exception):
    """str(exception); when that raises, '<repr> (its __str__ raised X: ...)'."""
    try:
        return str(exception)
    except Exception as failure:  # noqa: B902 - any __str__ bug
        return f'{_safe_repr(exception)} (its __str__ raised {type(failure).__name__})'


def _safe_repr(value):
    try:
        return repr(value)
    except Exception:  # noqa: B902 - a __repr__ that raises too
        return object.__repr__(value)
