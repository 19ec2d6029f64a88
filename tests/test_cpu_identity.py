"""run.hardware tells apart hosts that a virtual machine names alike (lrreal/binding.cpu_identity):
two AMD EPYC hosts of one name ran the engines 4x apart, and only family/model/ISA differ."""
from lrreal.binding import cpu_identity

MILAN = """processor\t: 0
vendor_id\t: AuthenticAMD
cpu family\t: 25
model\t\t: 1
model name\t: AMD EPYC
stepping\t: 1
flags\t\t: fpu sse2 avx avx2 fma f16c

processor\t: 1
cpu family\t: 99
model name\t: Something Else
"""


def test_the_first_cpu_is_read_with_family_model_and_vector_units():
    assert cpu_identity(MILAN) == {"cpu_model": "AMD EPYC", "cpu_id": "family 25 model 1 stepping 1",
                                   "cpu_isa": ["avx", "avx2", "fma"]}


def test_hosts_of_one_name_differ_by_identity():
    genoa = MILAN.replace("model\t\t: 1\n", "model\t\t: 17\n").replace("fma f16c", "fma avx512f avx512_bf16")
    a, b = cpu_identity(MILAN), cpu_identity(genoa)
    assert a["cpu_model"] == b["cpu_model"] and a["cpu_id"] != b["cpu_id"]
    assert b["cpu_isa"] == ["avx", "avx2", "avx512_bf16", "avx512f", "fma"]


def test_missing_fields_are_left_out():
    assert cpu_identity("") == {}
    assert cpu_identity("model name\t: X\n") == {"cpu_model": "X"}
