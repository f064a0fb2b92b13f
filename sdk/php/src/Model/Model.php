<?php

declare(strict_types=1);

namespace Posthorn\Model;

/**
 * Typed models of the public and operator APIs' answers; property names are the JSON names,
 * times are DateTimeImmutable, nested objects are models too. Each is checked against
 * /public/v1/openapi.json or /operator/v1/openapi.json by the test suite. Fields the server
 * adds later are ignored, so an older client keeps working.
 */
abstract class Model
{
    /** Builds the model from its JSON object by the declared property types. */
    public static function fromArray(array $data): static
    {
        $model = new static();
        foreach ((new \ReflectionClass(static::class))->getProperties(\ReflectionProperty::IS_PUBLIC) as $prop) {
            $name = $prop->getName();
            if (!array_key_exists($name, $data)) {
                continue;
            }
            $value = $data[$name];
            $type = $prop->getType();
            if ($value !== null && $type instanceof \ReflectionNamedType && !$type->isBuiltin()) {
                $class = $type->getName();
                if ($class === \DateTimeImmutable::class) {
                    $value = new \DateTimeImmutable($value);
                } elseif (is_subclass_of($class, self::class)) {
                    $value = $class::fromArray($value);
                }
            }
            $model->{$name} = $value;
        }
        return $model;
    }
}
