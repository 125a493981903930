//! Meta values between Rust and Python: `gulp_format::Value` to the objects
//! `json.load` gives (dict, list, str, int, float, bool, None), and back, as
//! `json.dump` accepts them.

use gulp_format::{ItemMeta, Map, Value};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};

use crate::errors::Class;

/// A meta value as a Python object.
pub(crate) fn to_py<'py>(py: Python<'py>, value: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match value {
        Value::Null => py.None().into_bound(py),
        Value::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
        Value::Int(i) => i.into_pyobject(py)?.into_any(),
        Value::BigInt(b) => py.get_type::<PyInt>().call1((b.as_str(),))?.into_any(),
        Value::Float(f) => PyFloat::new(py, *f).into_any(),
        Value::String(s) => PyString::new(py, s).into_any(),
        Value::Array(items) => {
            let list = PyList::empty(py);
            for item in items {
                list.append(to_py(py, item)?)?;
            }
            list.into_any()
        }
        Value::Object(map) => {
            let dict = PyDict::new(py);
            for (k, v) in map {
                dict.set_item(k, to_py(py, v)?)?;
            }
            dict.into_any()
        }
    })
}

/// An item as gulpio2's meta dict has it: `{"frame_info": [[loc, pad,
/// length], ...], "meta_data": [...]}`.
pub(crate) fn item_to_py<'py>(py: Python<'py>, item: &ItemMeta) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    let infos = PyList::empty(py);
    for fi in &item.frame_info {
        infos.append(PyList::new(py, [fi.loc, fi.pad, fi.length])?)?;
    }
    dict.set_item("frame_info", infos)?;
    let meta = PyList::empty(py);
    for v in item.meta_data.iter() {
        meta.append(to_py(py, v)?)?;
    }
    dict.set_item("meta_data", meta)?;
    Ok(dict)
}

/// A Python object as a meta value, as `json.dump` would write it; `what`
/// names it in the error ("meta of id 'x'").
pub(crate) fn from_py(obj: &Bound<'_, PyAny>, what: &dyn Fn() -> String) -> PyResult<Value> {
    from_py_depth(obj, what, 0)
}

fn from_py_depth(
    obj: &Bound<'_, PyAny>,
    what: &dyn Fn() -> String,
    depth: usize,
) -> PyResult<Value> {
    if depth > 500 {
        return Err(Class::Invalid.err(format!("{}: nested too deeply", what())));
    }
    if obj.is_none() {
        return Ok(Value::Null);
    }
    if let Ok(b) = obj.cast::<PyBool>() {
        return Ok(Value::Bool(b.is_true()));
    }
    if obj.is_instance_of::<PyInt>() {
        if let Ok(i) = obj.extract::<i64>() {
            return Ok(Value::Int(i));
        }
        let text = obj.str()?.to_string();
        return gulp_format::BigInt::new(&text)
            .map(Value::BigInt)
            .ok_or_else(|| Class::Invalid.err(format!("{}: integer {text}", what())));
    }
    if let Ok(f) = obj.cast::<PyFloat>() {
        return Ok(Value::Float(f.value()));
    }
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok(Value::String(s.to_cow()?.into_owned()));
    }
    if obj.is_instance_of::<PyList>() || obj.is_instance_of::<PyTuple>() {
        let mut items = Vec::new();
        for item in obj.try_iter()? {
            items.push(from_py_depth(&item?, what, depth + 1)?);
        }
        return Ok(Value::Array(items));
    }
    if let Ok(dict) = obj.cast::<PyDict>() {
        let mut map = Map::default();
        for (k, v) in dict.iter() {
            map.insert(key(&k, what)?, from_py_depth(&v, what, depth + 1)?);
        }
        return Ok(Value::Object(map));
    }
    // numpy scalars and arrays: their Python equivalents (json.dump
    // rejects them; gulpio2 then leaves a truncated meta file).
    if obj.hasattr("tolist")? && obj.hasattr("dtype")? {
        return from_py_depth(&obj.call_method0("tolist")?, what, depth + 1);
    }
    Err(Class::Invalid.err(format!(
        "{}: a {} cannot be stored in meta (JSON types only)",
        what(),
        obj.get_type().name()?
    )))
}

/// A dict key as `json.dump` writes it.
fn key(k: &Bound<'_, PyAny>, what: &dyn Fn() -> String) -> PyResult<String> {
    if let Ok(s) = k.cast::<PyString>() {
        return Ok(s.to_cow()?.into_owned());
    }
    if let Ok(b) = k.cast::<PyBool>() {
        return Ok(if b.is_true() { "true" } else { "false" }.to_owned());
    }
    if k.is_none() {
        return Ok("null".to_owned());
    }
    if k.is_instance_of::<PyInt>() {
        return Ok(k.str()?.to_string());
    }
    if k.is_instance_of::<PyFloat>() {
        return Ok(k.repr()?.to_string());
    }
    Err(Class::Invalid.err(format!(
        "{}: keys must be str, int, float, bool or None, not {}",
        what(),
        k.get_type().name()?
    )))
}
