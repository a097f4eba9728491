"""Names sharing memory that are rebound, and np.newaxis views, under writes in place.

A name rebound while it shares an array leaves its old value on the tape by
reference; a later write into that array would change what the adjoint reads, so the
compiler refuses it (aliasing.check_rebound).  ``w = w[::-1]`` keeps w a view, so
reading w after a write into its array is refused as for any view.  ``z[np.newaxis]``
is a view as ``z[None]`` is.  Programs that were exact stay exact.
"""
import numpy as np
import pytest
from numpy import newaxis

import srcdiff as sd
from compiler_programs import check_grad

X = np.array([0.5, -1.0, 0.7])
S = 3.0


def _assert_exact(f, s=S):
    """Compiled gradients against finite differences (the tape writes no ndarray)."""
    check_grad(f, (X.copy(), s), wrt=(0, 1), eager=False)


# ------------------------------------------------- an alias rebound, then a write (C1)

def rebound_sin(x, s):
    z = x * s
    w = z
    w = np.sin(w)
    z[0] = 1.0
    return np.sum(w)


def rebound_times(x, s):
    z = x * s
    w = z
    w = w * s
    z[0] = 1.0
    return np.sum(w)


def rebound_power(x, s):
    z = x * s
    w = z
    w = w ** 2
    z[0] = 1.0
    return np.sum(w)


def rebound_slice_view(x, s):
    z = x * s
    w = z[:]
    w = w * s
    z[0] = 1.0
    return np.sum(w)


def rebound_second_alias(x, s):
    z = x * s
    w = z
    u = w
    u = u * s
    w[0] = 1.0
    return np.sum(u)


def rebound_after_read(x, s):  # the old value is read before the rebinding, not by it
    z = x * s
    w = z
    v = np.sin(w)
    w = x * 2.0
    z[0] = 1.0
    return np.sum(v) + np.sum(w)


def rebound_base(x, s):  # the array's first name rebound, written through the alias
    z = x * s
    w = z
    z = np.sin(z)
    w[0] = 1.0
    return np.sum(z) + np.sum(w)


def rebound_tuple(x, s):
    z = x * s
    w = z
    w, q = np.sin(w), 1.0
    z[0] = 1.0
    return np.sum(w) * q


def rebound_then_loop_writes(x, s):
    z = x * s
    w = z
    w = w * s
    for i in range(2):
        z[i] = s
    return np.sum(w) + np.sum(z)


def rebound_in_loop(x, s):
    z = x * s
    t = 0.0
    for i in range(2):
        w = z
        w = np.sin(w)
        t = t + np.sum(w)
        z[i] = s
    return t


def rebound_by_loop_target(x, s):
    z = x * s
    w = z
    v = np.sin(w)
    for w in [x, x]:
        v = v + w
    z[0] = 1.0
    return np.sum(v)


def self_view_no_partner(x, s):  # z = z[::-1] keeps z's array, which the tape holds
    z = x * s
    v = np.sin(z)
    z = z[::-1]
    z[0] = 1.0
    return np.sum(v) + np.sum(z * x)


def self_view_reversed(x, s):  # w is still a view of z: it sees the write
    z = x * s
    w = z
    w = w[::-1]
    z[0] = 1.0
    return np.sum(w * x)


def self_view_reshaped(x, s):
    z = x * s
    w = z
    w = w.reshape(1, -1)
    z[0] = 1.0
    return np.sum(w * x)


REFUSED = [rebound_sin, rebound_times, rebound_power, rebound_slice_view,
           rebound_second_alias, rebound_after_read, rebound_base, rebound_tuple,
           rebound_then_loop_writes, rebound_in_loop, rebound_by_loop_target,
           self_view_no_partner, self_view_reversed, self_view_reshaped]


@pytest.mark.parametrize("f", REFUSED, ids=lambda f: f.__name__)
def test_a_write_into_memory_an_old_or_viewing_value_shares_is_refused(f):
    with pytest.raises(sd.CompileError, match="two values share"):
        sd.grad(f, wrt=(0, 1))(X.copy(), S)


def test_the_refusal_names_the_rebound_value():
    with pytest.raises(sd.CompileError, match="'w' held before line"):
        sd.grad(rebound_sin, wrt=(0, 1))(X.copy(), S)


# ---------------------------------------------------------------- still exact

def no_alias(x, s):
    z = x * s
    v = z * s
    z[0] = 1.0
    return np.sum(v)


def alias_not_rebound(x, s):  # the write snapshots w
    z = x * s
    w = z
    v = np.sin(w)
    z[0] = 1.0
    return np.sum(v)


def old_value_lives_on_new_one_written(x, s):
    h = x * s
    prev = h
    for i in range(3):
        prev = h
        h = np.tanh(h)
        h[0] = 0.5
    return np.sum(h * prev)


def rebound_without_sharing(x, s):
    z = x * s
    w = z * 1.0
    w = np.sin(w)
    w[0] = 1.0
    return np.sum(w) + np.sum(z)


def rebound_then_no_write(x, s):
    z = x * s
    w = z
    w = np.sin(w)
    return np.sum(w) + np.sum(z)


def copy_rebound(x, s):
    z = x * s
    w = z.copy()
    w = np.sin(w)
    z[0] = 1.0
    return np.sum(w) + np.sum(z)


def newaxis_view_read_before_the_write(x, s):
    z = x * s
    v = z[np.newaxis]
    t = np.sum(v * x)
    z[1] = s
    return t + np.sum(z)


EXACT = [no_alias, alias_not_rebound, old_value_lives_on_new_one_written,
         rebound_without_sharing, rebound_then_no_write, copy_rebound,
         newaxis_view_read_before_the_write]


@pytest.mark.parametrize("f", EXACT, ids=lambda f: f.__name__)
def test_programs_without_a_stale_shared_value_stay_exact(f):
    _assert_exact(f)


# ------------------------------------------------------------- np.newaxis views (C3)

def newaxis_write_through_view(x, y):
    z = x * 1.0
    v = z[np.newaxis]
    v[0, 1] = y
    return np.sum(z * x)


def newaxis_slice_write_through_view(x, y):
    z = x * 1.0
    v = z[np.newaxis, :]
    v[0, 1] = y
    return np.sum(z * x)


def newaxis_column_read_after_update(x, y):
    z = x * 1.0
    v = z[:, np.newaxis]
    z *= y
    return np.sum(v * x[:, None])


def imported_newaxis_write_through_view(x, y):
    z = x * 1.0
    v = z[newaxis]
    v[0, 1] = y
    return np.sum(z * x)


def none_write_through_view(x, y):
    z = x * 1.0
    v = z[None]
    v[0, 1] = y
    return np.sum(z * x)


@pytest.mark.parametrize("f", [newaxis_write_through_view, newaxis_slice_write_through_view,
                               newaxis_column_read_after_update,
                               imported_newaxis_write_through_view, none_write_through_view],
                         ids=lambda f: f.__name__)
def test_a_newaxis_index_makes_a_view(f):
    with pytest.raises(sd.CompileError, match="two values share"):
        sd.grad(f, wrt=(0, 1))(X.copy(), 2.0)


def newaxis_read_only(x, s):
    v = (x * s)[np.newaxis, :, np.newaxis]
    return np.sum(v * x[None, :, None])


def test_a_newaxis_view_only_read_is_exact():
    _assert_exact(newaxis_read_only)


# ------------------------------------ the old memory passed on (a user function, pieces)

def _same(a):
    return a


def passed_through_a_function(x, s):
    z = x * s
    w = z
    v = np.sin(w)
    w = x * 2.0
    u = _same(z)
    u[0] = 1.0
    return np.sum(v)  # w, z unread after the write


def cut_into_pieces(x, s):
    z = x * s
    w = z
    v = np.sin(w)
    w = x * 2.0
    a, b = np.split(z, [1])
    a[0] = 1.0
    return np.sum(v)  # w, z unread after the write


def held_in_a_list(x, s):
    z = x * s
    w = z
    v = np.sin(w)
    w = x * 2.0
    xs = [z, x]
    t = xs[0]
    t[0] = 1.0
    return np.sum(v)  # w, z unread after the write


@pytest.mark.parametrize("f", [passed_through_a_function, cut_into_pieces, held_in_a_list],
                         ids=lambda f: f.__name__)
def test_a_write_through_what_the_old_memory_was_passed_to_is_refused(f):
    with pytest.raises(sd.CompileError, match="held before line"):
        sd.grad(f, wrt=(0, 1))(X.copy(), S)


# ------------- a write through what holds the array: pieces, containers, a callee (C3)
# An adjoint read y before the write: the plan snapshots it there, as for a view.

def piece_of_a_split(x, s):
    y = np.sin(x * s)
    v = np.sum(y * x)
    z = np.array_split(y, 2)[0]
    z[0] = 3.0
    return v


def unpacked_pieces(x, s):
    y = np.sin(x * s)
    v = np.sum(y * x)
    a, b = np.split(y, [1])
    b[0] = 3.0
    return v * s


def item_of_a_list(x, s):
    y = np.sin(x * s)
    v = np.sum(y * x)
    xs = [y, s]
    t = xs[0]
    t[1] = 3.0
    return v


def item_of_nested_tuples(x, s):
    y = np.sin(x * s)
    v = np.sum(y * x)
    t = ((y,), x)
    z = t[0][0]
    z[2] = 3.0
    return v


def item_appended(x, s):
    y = np.sin(x * s)
    v = np.sum(y * x)
    xs = []
    xs.append(y)
    t = xs[0]
    t[0] = 3.0
    return v * s


def returned_by_a_helper(x, s):
    y = np.sin(x * s)
    v = np.sum(y * x)
    z = _same(y)
    z[0] = 3.0
    return v


HELD = [piece_of_a_split, unpacked_pieces, item_of_a_list, item_of_nested_tuples,
        item_appended, returned_by_a_helper]


@pytest.mark.parametrize("f", HELD, ids=lambda f: f.__name__)
def test_a_write_through_what_holds_an_array_read_before_is_exact(f):
    # the plan snapshotted only names linked by views: y was saved by reference and
    # the adjoint read it changed
    _assert_exact(f)


def piece_read_after(x, s):
    y = np.sin(x * s)
    z = np.split(y, 3)[1]
    z[0] = 3.0
    return np.sum(y * x)


def piece_updated_then_read(x, s):
    y = np.sin(x * s)
    z = np.array_split(y, 2)[1]
    z += s
    return np.sum(y * x)


@pytest.mark.parametrize("f", [piece_read_after, piece_updated_then_read],
                         ids=lambda f: f.__name__)
def test_a_write_through_a_piece_kept_in_its_list_then_a_read_is_refused(f):
    # the pieces a split returns in a list were no view of the array split
    with pytest.raises(sd.CompileError, match="may share its memory"):
        sd.grad(f, wrt=(0, 1))(X.copy(), S)


# ------------------------------- a name rebound to a new array, then updated in place
# ``z = y; z = z + 1.0; z += x``: after the rebinding z holds an array of its own, and
# the update changes no other name's (it was refused, as z had once shared y's).

def copy_rebound_then_updated(x, s):
    y = x * s
    z = y
    z = z + 1.0
    z += x
    return np.sum(z * y)


def view_rebound_then_updated_twice(x, s):
    y = x * s
    z = y[::-1]
    z = np.sin(z)
    z *= x
    z += y
    return np.sum(z * y)


def rebound_in_both_arms_then_updated(x, s):
    y = x * s
    z = y
    if s > 2.0:
        z = z * 2.0
    else:
        z = np.cos(z)
    z -= x
    return np.sum(z * y) + np.sum(y)


def rebound_in_a_loop_then_updated(x, s):
    y = x * s
    z = y
    for _ in range(3):
        z = np.tanh(z)
        z += x * 0.5
    return np.sum(z) + np.sum(y * x)


@pytest.mark.parametrize("f", [copy_rebound_then_updated, view_rebound_then_updated_twice,
                               rebound_in_both_arms_then_updated,
                               rebound_in_a_loop_then_updated], ids=lambda f: f.__name__)
def test_an_update_of_a_name_rebound_to_a_new_array_is_exact(f):
    check_grad(f, (X.copy(), S), wrt=(0, 1))
    check_grad(f, (X.copy(), 1.5), wrt=(0, 1))


def rebound_in_one_arm_only(x, s):
    y = x * s
    z = y
    if s > 2.0:
        z = z * 2.0
    z += x  # y's own array, when s <= 2
    return np.sum(z * y)


def updated_before_the_rebinding_in_a_loop(x, s):
    y = x * s
    z = y
    for _ in range(2):
        z += x  # y's array on the first pass
        z = z * 2.0
    return np.sum(z * y)


def handed_on_after_the_rebinding(x, s):
    y = x * s
    z = y + 1.0
    w = z  # the same array again
    z += x
    return np.sum(w * y)


def held_in_a_list_after_the_rebinding(x, s):
    z = x * s
    zs = [z]
    z += x
    return np.sum(zs[0] * x)


@pytest.mark.parametrize("f", [rebound_in_one_arm_only, updated_before_the_rebinding_in_a_loop,
                               handed_on_after_the_rebinding,
                               held_in_a_list_after_the_rebinding], ids=lambda f: f.__name__)
def test_an_update_of_an_array_another_name_holds_is_refused(f):
    with pytest.raises(sd.CompileError, match="share"):
        sd.grad(f, wrt=(0, 1))(X.copy(), 1.5)


# ------------------------------------- a write through a name that is then rebound

# The write changed the other name's array for good: rebinding the name written
# through (or the one written into) ends the sharing, not the change (found by fuzzing).

def view_copied_after_its_write(x, s):
    y = x
    y[0] = np.dot(y, y)
    y = y.copy()
    return np.sum(x * y)


def view_rebound_new_after_its_write(x, s):
    z = x * s
    w = z
    w[2] = s * s
    w = np.sin(x)
    return np.sum(z * w)


def view_unpacked_over_after_its_write(x, s):
    z = np.sin(x)
    w = z
    w[1] = s
    w, *rest = [x * s, x]
    return np.sum(z) + np.sum(w)


def base_rebound_after_a_write_into_it(x, s):
    z = x * s
    w = z
    z[0] = s
    z = np.cos(x)
    return np.sum(w) + np.sum(z)


def view_rebound_in_a_branch(x, s):
    z = x * s
    w = z
    w[0] = s
    if s > 0.0:
        w = np.tanh(w)
    return np.sum(z) + np.sum(w)


def view_copied_in_a_loop(x, s):  # the next pass reads z, which the last one changed
    z = x * s
    t = 0.0
    for i in range(2):
        w = z
        w[i] = s
        w = w.copy()
        t = t + np.sum(w * x)
    return t


@pytest.mark.parametrize("f", [view_copied_after_its_write, view_rebound_new_after_its_write,
                               view_unpacked_over_after_its_write,
                               base_rebound_after_a_write_into_it, view_rebound_in_a_branch,
                               view_copied_in_a_loop],
                         ids=lambda f: f.__name__)
def test_a_read_of_what_a_write_through_a_rebound_name_changed_is_refused(f):
    with pytest.raises(sd.CompileError, match="two values share"):
        sd.grad(f, wrt=(0, 1))(X.copy(), S)


def view_written_rebound_then_only_it_read(x, s):
    z = x * s
    t = np.sum(z * z)
    w = z
    w[0] = s
    w = w.copy()
    return t + np.sum(w * x)


def base_written_rebound_then_only_it_read(x, s):
    z = x * s
    w = z
    t = np.sum(w)
    z[1] = s * s
    z = np.sin(z)
    return t + np.sum(z)


@pytest.mark.parametrize("f", [view_written_rebound_then_only_it_read,
                               base_written_rebound_then_only_it_read],
                         ids=lambda f: f.__name__)
def test_a_name_rebound_after_a_write_then_read_alone_stays_exact(f):
    _assert_exact(f)
